-- bench/sync/plans.sql: EXPLAIN (ANALYZE, BUFFERS) of the change-feed queries, with the exact
-- statement texts of Sources/Locify/FeedStore.swift (keep them in sync) prepared with the
-- parameter types the server binds, under both the custom and the generic plan (the server's
-- prepared statements switch to the generic plan after a few executions).
--
-- psql variables: uid, seq (delta cursor stamp), high_water (snapshot stamp), middle_id (a
-- location id in the middle of the user's id range).
\set ON_ERROR_STOP on

PREPARE delta_categories(text, bigint, bigint, uuid, bigint) AS
SELECT r.change_seq, r.id, r.name, r.icon, r.location_count, r.version, r.created_at, r.updated_at, r.deleted_at
FROM categories r
WHERE r.user_id = $1 AND r.change_seq >= $2 AND (r.change_seq > $2 OR $3 = 0 AND r.id > $4)
ORDER BY r.change_seq, r.id
LIMIT $5;

PREPARE delta_locations(text, bigint, bigint, uuid, bigint) AS
SELECT r.change_seq, r.id, r.category_id, r.name, r.address, r.description, r.latitude, r.longitude, r.is_favorite,
       r.image_urls, r.version, r.created_at, r.updated_at, r.deleted_at
FROM locations r
WHERE r.user_id = $1 AND r.change_seq >= $2 AND (r.change_seq > $2 OR $3 = 0 OR ($3 = 1 AND r.id > $4))
ORDER BY r.change_seq, r.id
LIMIT $5;

PREPARE snapshot_categories(text, bigint, uuid, bigint) AS
SELECT r.id, r.name, r.icon, r.location_count, r.version, r.created_at, r.updated_at, r.deleted_at
FROM categories r
WHERE r.user_id = $1 AND r.deleted_at IS NULL AND r.change_seq <= $2 AND r.id > $3
ORDER BY r.id
LIMIT $4;

PREPARE snapshot_locations(text, bigint, uuid, bigint) AS
SELECT r.id, r.category_id, r.name, r.address, r.description, r.latitude, r.longitude, r.is_favorite,
       r.image_urls, r.version, r.created_at, r.updated_at, r.deleted_at
FROM locations r
WHERE r.user_id = $1 AND r.deleted_at IS NULL AND r.change_seq <= $2 AND r.id > $3
ORDER BY r.id
LIMIT $4;

\echo '### Delta: 500 changes after a cursor near the end of the history (limit 500, so 501 rows are asked for)'
\echo
\echo '#### categories, custom plan'
SET plan_cache_mode = force_custom_plan;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE delta_categories(:'uid', :seq, 2, '00000000-0000-0000-0000-000000000000', 501);
\echo '#### locations, custom plan'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE delta_locations(:'uid', :seq, 2, '00000000-0000-0000-0000-000000000000', 501);
SET plan_cache_mode = force_generic_plan;
\echo '#### categories, generic plan'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE delta_categories(:'uid', :seq, 2, '00000000-0000-0000-0000-000000000000', 501);
\echo '#### locations, generic plan'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE delta_locations(:'uid', :seq, 2, '00000000-0000-0000-0000-000000000000', 501);

\echo '### Delta from far behind: a cursor at stamp 100, with the whole history after it'
\echo
SET plan_cache_mode = force_custom_plan;
\echo '#### locations, custom plan'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE delta_locations(:'uid', 100, 2, '00000000-0000-0000-0000-000000000000', 501);
SET plan_cache_mode = force_generic_plan;
\echo '#### locations, generic plan'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE delta_locations(:'uid', 100, 2, '00000000-0000-0000-0000-000000000000', 501);

\echo '### Snapshot: the first categories page, and a locations page in the middle (limit 500)'
\echo
SET plan_cache_mode = force_custom_plan;
\echo '#### categories (first page), custom plan'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE snapshot_categories(:'uid', :high_water, '00000000-0000-0000-0000-000000000000', 501);
\echo '#### locations (middle page), custom plan'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE snapshot_locations(:'uid', :high_water, :'middle_id', 501);
SET plan_cache_mode = force_generic_plan;
\echo '#### categories (first page), generic plan'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE snapshot_categories(:'uid', :high_water, '00000000-0000-0000-0000-000000000000', 501);
\echo '#### locations (middle page), generic plan'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE snapshot_locations(:'uid', :high_water, :'middle_id', 501);
