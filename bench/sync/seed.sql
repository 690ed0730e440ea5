-- bench/sync/seed.sql: one user with a large sync history, and other users around it.
--
-- psql variables: uid (the measured user), categories, locations (rows of that user, live or
-- tombstones), stride (stamps between two locations: the changes each location went through
-- before its last one, so the history is locations x stride stamps long), history (later edits
-- of random locations, every third one a delete), others (other users) and per_other (locations
-- each). Run by bench/sync/run on a migrated database.
--
-- Rows are written as the services write them (names, sort keys, search text, one change stamp
-- per write, per-user change_seq); the counters are computed once at the end instead of by the
-- triggers row by row.
\set ON_ERROR_STOP on
BEGIN;
SELECT set_config('locify.skip_counters', 'on', true);

INSERT INTO users (id, email, name, change_seq, created_at, updated_at)
SELECT id, id || '@example.com', 'Bench user', 0, now() - interval '20 days', now() - interval '20 days'
FROM (SELECT :'uid' AS id UNION ALL SELECT 'other-' || u FROM generate_series(1, :others) u) ids;

-- The measured user: categories stamped 1..categories, then locations, then the history.
INSERT INTO categories (user_id, id, name, name_key, version, created_at, updated_at, change_seq, changed_at)
SELECT :'uid', md5(:'uid' || ':c:' || g)::uuid, 'Category ' || g, 'category ' || g, 1,
       now() - interval '20 days', now() - interval '20 days', g, now() - interval '20 days'
FROM generate_series(1, :categories) g;

INSERT INTO locations (user_id, id, category_id, name, name_key, address, description, search_text,
                       latitude, longitude, is_favorite, image_urls, version, created_at, updated_at,
                       change_seq, changed_at)
SELECT :'uid', md5(:'uid' || ':l:' || g)::uuid, md5(:'uid' || ':c:' || (g % :categories + 1))::uuid,
       'Place ' || g, 'place ' || g, g || ' Main Street', 'A place worth a visit, number ' || g,
       'place ' || g || E'\n' || g || ' main street' || E'\n' || 'a place worth a visit, number ' || g,
       (g % 180) - 89.5, (g % 360) - 179.5, g % 7 = 0,
       ARRAY['https://firebasestorage.googleapis.com/v0/b/bench.appspot.com/o/locations%2F' || :'uid' || '%2F' || g || '%2Fa.jpg?alt=media'],
       1, now() - interval '20 days', now() - interval '20 days', :categories + g * :stride, now() - interval '20 days'
FROM generate_series(1, :locations) g;

WITH picked AS (
    SELECT id, row_number() OVER (ORDER BY md5(id::text || ':h')) AS n
    FROM locations WHERE user_id = :'uid'
    ORDER BY md5(id::text || ':h')
    LIMIT :history
)
UPDATE locations l
   SET version = l.version + 1, name = l.name || ' (edited)', name_key = l.name_key || ' (edited)',
       updated_at = now() - interval '10 days' + p.n * interval '1 second',
       deleted_at = CASE WHEN p.n % 3 = 0 THEN now() - interval '10 days' + p.n * interval '1 second' END,
       change_seq = :categories + :locations * :stride + p.n,
       changed_at = now() - interval '10 days' + p.n * interval '1 second'
  FROM picked p
 WHERE l.user_id = :'uid' AND l.id = p.id;

UPDATE users SET change_seq = :categories + :locations * :stride + :history WHERE id = :'uid';

-- Other users: 10 categories and per_other locations each.
INSERT INTO categories (user_id, id, name, name_key, version, created_at, updated_at, change_seq, changed_at)
SELECT 'other-' || u, md5('other-' || u || ':c:' || g)::uuid, 'Category ' || g, 'category ' || g, 1,
       now() - interval '20 days', now() - interval '20 days', g, now() - interval '20 days'
FROM generate_series(1, :others) u, generate_series(1, 10) g;

INSERT INTO locations (user_id, id, category_id, name, name_key, search_text, latitude, longitude,
                       version, created_at, updated_at, change_seq, changed_at)
SELECT 'other-' || u, md5('other-' || u || ':l:' || g)::uuid, md5('other-' || u || ':c:' || (g % 10 + 1))::uuid,
       'Place ' || g, 'place ' || g, 'place ' || g || E'\n\n', 1, 2,
       1, now() - interval '20 days', now() - interval '20 days', 10 + g, now() - interval '20 days'
FROM generate_series(1, :others) u, generate_series(1, :per_other) g;

UPDATE users SET change_seq = 10 + :per_other WHERE id LIKE 'other-%';

-- The counters the triggers would have maintained.
UPDATE categories c
   SET location_count = s.live, favorite_count = s.favorites
  FROM (SELECT user_id, category_id,
               count(*) FILTER (WHERE deleted_at IS NULL) AS live,
               count(*) FILTER (WHERE deleted_at IS NULL AND is_favorite) AS favorites
          FROM locations GROUP BY user_id, category_id) s
 WHERE c.user_id = s.user_id AND c.id = s.category_id;
UPDATE users u
   SET category_count = (SELECT count(*) FROM categories c WHERE c.user_id = u.id AND c.deleted_at IS NULL);
COMMIT;

VACUUM ANALYZE users;
VACUUM ANALYZE categories;
VACUUM ANALYZE locations;
