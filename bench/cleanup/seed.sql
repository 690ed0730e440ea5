-- Seeds one user straight into a database migrated by `locify-server migrate`: one category
-- (:category) of :n live locations, each with :images Firebase Storage URLs of bucket :bucket,
-- inside the location's own folder (`locations/<uid>/<LOCATION ID>/`, upper case as iOS writes it)
-- or, with shared=1, in one folder of the user's no deletion queues (`locations/<uid>/shared/`).
--
--   psql "$DATABASE_URL" -v uid=u -v category=<uuid> -v n=20000 -v images=10 -v shared=0 \
--        -v bucket=bench.appspot.com -f bench/cleanup/seed.sql
--
-- Counter triggers are skipped while inserting (locify.skip_counters) and the counters set at the
-- end, which is what the triggers would have produced.
\set ON_ERROR_STOP on

BEGIN;
SET LOCAL locify.skip_counters = 'on';
INSERT INTO users (id, email, name, change_seq, category_count, created_at, updated_at)
VALUES (:'uid', :'uid' || '@example.com', 'Bench', :n + 1, 1, now(), now());
INSERT INTO categories (user_id, id, name, name_key, version, created_at, updated_at, change_seq, location_count)
VALUES (:'uid', :'category', 'Big', 'big', 1, now() - interval '1 day', now() - interval '1 day', 1, :n);
INSERT INTO locations (user_id, id, category_id, name, name_key, search_text, latitude, longitude, image_urls,
                       images_outside_folder, version, created_at, updated_at, change_seq)
SELECT :'uid', l.id, :'category', 'Place ' || g, 'place ' || g, 'place ' || g, 1, 1,
       ARRAY(SELECT format('https://firebasestorage.googleapis.com/v0/b/%s/o/locations%%2F%s%%2F%s%%2Fimage-%s.jpg?alt=media&token=t',
                           :'bucket', :'uid', CASE WHEN :shared = 1 THEN 'shared%2F' || g ELSE upper(l.id::text) END, i)
             FROM generate_series(1, :images) i),
       :shared = 1 AND :images > 0,  -- what the server's rule (StorageScope.imagesOutsideFolder) gives these URLs
       1, now() - interval '1 day', now() - interval '1 day', 1 + g
FROM generate_series(1, :n) g
CROSS JOIN LATERAL (SELECT md5(:'uid' || '/' || g)::uuid AS id) l;
COMMIT;
