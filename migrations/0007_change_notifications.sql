-- Live sync (README "How sync works", long-poll): every write transaction stamps its user's next
-- change by incrementing users.change_seq (AccountGate.beginWrite, or the create fast path's
-- first statement). This trigger adds a NOTIFY on the channel locify_changes with the user id to
-- that same transaction, so PostgreSQL delivers it only when the change commits, and to every
-- server instance listening (LiveChanges, one LISTEN connection per instance), which wakes that
-- user's waiting pulls. Notifications of one transaction with the same payload are sent once.
CREATE FUNCTION locify_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('locify_changes', NEW.id);
    RETURN NULL;
END;
$$;

CREATE TRIGGER users_change_notify
    AFTER UPDATE OF change_seq ON users
    FOR EACH ROW WHEN (NEW.change_seq IS DISTINCT FROM OLD.change_seq)
    EXECUTE FUNCTION locify_notify_change();
