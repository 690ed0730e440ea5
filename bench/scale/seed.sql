-- Seeds one user straight into a database migrated by `locify-server migrate`, the way the server
-- would have written it: the four default categories at the epoch, 16 more categories, :live live
-- locations spread over the 20 categories (each holds about 1/20 of them; every
-- 10th location is a favourite) plus :live/50 tombstones, then the counters the triggers maintain.
--
--   psql "$DATABASE_URL" -v uid=scale-100k -v live=100000 -f bench/scale/seed.sql
--
-- Counter triggers are skipped while inserting (locify.skip_counters) and the counters are set from
-- count(*) at the end, which is what the triggers would have produced (CountersTests checks that
-- equivalence), in a few seconds instead of 200,000 counter updates.
\set ON_ERROR_STOP on

BEGIN;
SET LOCAL locify.skip_counters = 'on';

INSERT INTO users (id, email, name, change_seq, created_at, updated_at)
VALUES (:'uid', :'uid' || '@example.com', 'Scale ' || :'uid', 1, now(), now());

INSERT INTO categories (user_id, id, name, name_key, version, created_at, updated_at, change_seq)
VALUES (:'uid', '1f3599be-6e0e-5cf8-aa59-b97dfdc46aec', 'Restaurant', 'restaurant', 1, 'epoch', 'epoch', 1),
       (:'uid', 'a1050188-e456-5998-8293-a282220c9930', 'Cafe', 'cafe', 1, 'epoch', 'epoch', 1),
       (:'uid', '6c2f54c9-801e-5a83-bd62-9cb6d70037af', 'Tourist Attraction', 'tourist attraction', 1, 'epoch', 'epoch', 1),
       (:'uid', '663e8afc-3c33-5d02-920a-fb4e755a6efb', 'Favorites', 'favorites', 1, 'epoch', 'epoch', 1);

INSERT INTO categories (user_id, id, name, name_key, version, created_at, updated_at, change_seq)
SELECT :'uid', md5(:'uid' || '/category/' || g)::uuid, format('Category %s', lpad(g::text, 2, '0')),
       format('category %s', lpad(g::text, 2, '0')), 1, timestamptz '2024-01-01' + g * interval '1 hour',
       timestamptz '2024-01-01' + g * interval '1 hour', 1
FROM generate_series(1, 16) g;

-- Location g: created one minute after location g-1 (so created_at is unique and ordered),
-- updated up to ~16 minutes later; category by g mod 20, with 'Category 01' first.
INSERT INTO locations (user_id, id, category_id, name, name_key, address, description, search_text, latitude, longitude,
                       is_favorite, image_urls, version, created_at, updated_at, deleted_at, change_seq)
SELECT :'uid', md5(:'uid' || '/location/' || g)::uuid, cats.ids[1 + g % 20], l.name, lower(l.name), l.address, l.description,
       lower(l.name) || E'\n' || lower(coalesce(l.address, '')) || E'\n' || lower(coalesce(l.description, '')),
       (g % 17999) / 100.0 - 89.99, (g % 35999) / 100.0 - 179.99, g % 10 = 0,
       CASE WHEN g % 4 = 0 THEN ARRAY[format('https://firebasestorage.googleapis.com/v0/b/bench/o/locations%%2F%s%%2F%s.jpg', :'uid', g)]
            ELSE '{}' END,
       1, l.created_at, l.created_at + (g % 1000) * interval '1 second',
       CASE WHEN g > :live THEN l.created_at + (g % 1000) * interval '1 second' END,
       1 + g
FROM generate_series(1, :live + :live / 50) g
CROSS JOIN (
    SELECT array_agg(id ORDER BY name_key) AS ids FROM categories WHERE user_id = :'uid' AND name_key LIKE 'category %'
) extra
CROSS JOIN LATERAL (
    SELECT extra.ids || ARRAY['1f3599be-6e0e-5cf8-aa59-b97dfdc46aec', 'a1050188-e456-5998-8293-a282220c9930',
                              '6c2f54c9-801e-5a83-bd62-9cb6d70037af', '663e8afc-3c33-5d02-920a-fb4e755a6efb']::uuid[] AS ids
) cats
CROSS JOIN LATERAL (
    SELECT format('Place %s %s', (ARRAY['Alpha', 'bravo', 'Charlie', 'delta', 'Echo'])[1 + g % 5], g) AS name,
           format('%s Main Street, Springfield', g) AS address,
           CASE WHEN g % 3 = 0 THEN format('Visited in %s with 100%% satisfaction', 2000 + g % 25) END AS description,
           timestamptz '2020-01-01' + g * interval '1 minute' AS created_at
) l;

UPDATE users u
SET change_seq = (SELECT max(change_seq) FROM locations WHERE user_id = u.id),
    category_count = (SELECT count(*) FROM categories WHERE user_id = u.id AND deleted_at IS NULL)
WHERE u.id = :'uid';

UPDATE categories c
SET location_count = counts.live, favorite_count = counts.favorites
FROM (
    SELECT category_id, count(*) AS live, count(*) FILTER (WHERE is_favorite) AS favorites
    FROM locations WHERE user_id = :'uid' AND deleted_at IS NULL GROUP BY category_id
) counts
WHERE c.user_id = :'uid' AND c.id = counts.category_id;

COMMIT;
