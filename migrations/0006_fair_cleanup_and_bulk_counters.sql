-- Issue 23, item 3: a big category delete stays cheap and the clean-up queue is fair.
--
-- 1. Jobs are claimed in the order of `turn`, not of queueing: a user's jobs get consecutive
--    turns after that user's pending ones, and never earlier than the turn the queue is at (the
--    smallest pending turn), so users take turns job by job. A user who queues behind another
--    user's 100,000 jobs has their first job run right after the job in progress
--    (CleanupJobStore.enqueue, CleanupWorker). Existing jobs are numbered per user in their
--    queueing order, so a backlog present at the upgrade is shared out fairly too.
ALTER TABLE cleanup_jobs ADD COLUMN turn bigint NOT NULL DEFAULT 0;
UPDATE cleanup_jobs j SET turn = r.turn
FROM (SELECT user_id, id, row_number() OVER (PARTITION BY user_id ORDER BY id) AS turn FROM cleanup_jobs) r
WHERE r.user_id = j.user_id AND r.id = j.id;

-- The claim reads pending jobs by turn (this replaces the order by due time); the enqueue reads
-- the user's last pending turn.
DROP INDEX cleanup_jobs_due;
CREATE INDEX cleanup_jobs_by_turn ON cleanup_jobs (turn, id) WHERE state = 'pending';
CREATE INDEX cleanup_jobs_user_turn ON cleanup_jobs (user_id, turn) WHERE state = 'pending';

-- 2. A deletion with many folders or objects queues them in batches, one target per line (a
--    Storage object name holds no control character): up to 20 folders a 'storage_prefixes' job,
--    up to 100 objects a 'storage_objects' job, once a request has more than that many (fewer
--    still get a job each). A server older than this migration does not know these kinds and
--    ends such a job as 'failed_permanent' (requeue it as the README says once every instance is
--    upgraded).
ALTER TABLE cleanup_jobs DROP CONSTRAINT cleanup_jobs_kind_check;
ALTER TABLE cleanup_jobs ADD CONSTRAINT cleanup_jobs_kind_check
    CHECK (kind IN ('storage_prefix', 'storage_prefixes', 'storage_object', 'storage_objects', 'auth_account'));

-- 3. Counters after a category's deletion or revival. Its locations are hidden, shown elsewhere or
--    brought back by one statement over thousands of rows (LocationStore.follow); the per-row
--    trigger (0001) then updated the category's row once per location, and PostgreSQL follows the
--    chain of that row's earlier versions made in the same transaction on each update: quadratic
--    (20,000 locations: 41 s). Such statements run with `locify.skip_counters` on and then call
--    this function, which sets the counters of the categories involved from their live locations,
--    one statement linear in them. A deleted category left with live locations breaks the rule
--    the trigger enforces: SQLSTATE LC001.
-- With the setting on, a row no longer even calls the trigger function: the trigger's WHEN
-- clause checks it (20,000 calls that returned at once still took 0.4 s of a cascade).
DROP TRIGGER locations_counters ON locations;
CREATE TRIGGER locations_counters
    AFTER INSERT OR UPDATE OR DELETE ON locations
    FOR EACH ROW WHEN (current_setting('locify.skip_counters', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION locify_location_counters();

CREATE FUNCTION locify_recount_location_counters(p_user_id text, p_category_ids uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE categories c
       SET (location_count, favorite_count) = (
               SELECT count(*), count(*) FILTER (WHERE l.is_favorite)
                 FROM locations l
                WHERE l.user_id = c.user_id AND l.category_id = c.id AND l.deleted_at IS NULL)
     WHERE c.user_id = p_user_id AND c.id = ANY (p_category_ids);
    IF EXISTS (SELECT 1 FROM categories
                WHERE user_id = p_user_id AND id = ANY (p_category_ids) AND deleted_at IS NOT NULL AND location_count > 0) THEN
        RAISE EXCEPTION 'a deleted category of user % would hold live locations', p_user_id USING ERRCODE = 'LC001';
    END IF;
END;
$$;
