-- bench/http/ceiling-list.sql: the pgbench script of `bench/http/run --ceiling`.
--
-- The statement locify-server runs for the `list` workload, GET /v1/locations?page=1&size=20,
-- copied from LocationStore.listQuery (no category, favourite or text filter, sort created_at) as
-- `GatedRead` prepends the account gate, with Location.columns("l") and the total expression
-- written out and the in-SQL comment dropped. The server binds $1 user id (once, as `me.user_id`),
-- $2 limit, $3 offset and $4 the token's issue time (the gate); here they are pgbench variables,
-- which `-M prepared` sends as parameters of a prepared statement, as the server does (numbered in
-- order of occurrence, so the issue time is $1 here). The server also runs its sessions with
-- plan_cache_mode = force_generic_plan; the harness sets the same through PGOPTIONS.
-- User ids are 10^18 + 1 .. 10^18 + users (pass -D users=N), the ids the harness seeds.
--
-- bench/http/run compares this statement with the one the server ran for the list workload (read
-- from pg_stat_activity; comments, white space and parameter names ignored) and warns when they
-- differ: then re-copy it from LocationStore.listQuery.
--
\set uid 1000000000000000000 + random(1, :users)
\set size 20
\set skip 0
\set issued 0
SELECT (u.tokens_valid_after < :issued), total.n, l.id, l.category_id, l.name, l.address, l.description, l.latitude, l.longitude, l.is_favorite, l.image_urls, l.version, l.created_at, l.updated_at, l.deleted_at, l.own_category_id, l.hidden, l.field_stamps
FROM (SELECT :uid::text AS user_id) me
JOIN users u ON u.id = me.user_id
CROSS JOIN LATERAL (SELECT (SELECT COALESCE(sum(c.location_count), 0)::bigint FROM categories c
 WHERE c.user_id = me.user_id AND c.deleted_at IS NULL) AS n) total
LEFT JOIN LATERAL (
    SELECT loc.* FROM (
        SELECT id FROM locations
        WHERE user_id = u.id AND deleted_at IS NULL AND category_id <> ALL (u.hiding)
        ORDER BY created_at DESC, id
        LIMIT :size OFFSET :skip
    ) page
    CROSS JOIN LATERAL (
        SELECT * FROM locations r WHERE r.user_id = u.id AND r.id = page.id OFFSET 0
    ) loc
) l ON true
ORDER BY l.created_at DESC, l.id;
