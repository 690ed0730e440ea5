-- Issue 23, item 3: a cascade no longer reads the image URLs of locations whose photos are all in
-- their own Storage folder.
--
-- Deleting a category with its locations queues each location's folder
-- (`locations/<uid>/<location id>/`) and, object by object, the photos stored elsewhere
-- (CategoryService). The statement that hides the locations returned every image URL for the
-- server to sort out (20,000 locations x 10 photos: 200,000 URLs, about 30 MB, most of the
-- server's share of the request), although the app stores photos in the location's own folder,
-- which the folder's job removes anyway. `images_outside_folder` says, per row, whether any image
-- URL may name an object outside that folder; the hiding statement returns the URLs of those rows
-- only.
--
-- The rule errs on the safe side: false only when every URL is the Firebase download form
-- `https://firebasestorage.googleapis.com/v0/b/<bucket>/o/locations%2F<uid>%2F<id>%2F...`, with
-- the row's uid and id (either letter case) and a bucket and uid spelled without percent-encoding.
-- Such a URL names an object in that folder (of the server's bucket, which the folder's job
-- removes, or of another bucket, which the server never deletes from) or, malformed, nothing the
-- server would queue: CleanupFairnessTests checks this against the server's own URL parsing.
CREATE FUNCTION locify_images_outside_folder(p_image_urls text[], p_user_id text, p_id uuid) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT p_user_id !~ '^[A-Za-z0-9._~-]+$' OR EXISTS (
        SELECT FROM unnest(p_image_urls) AS url
        WHERE NOT (url ~ '^https://firebasestorage\.googleapis\.com/v0/b/[A-Za-z0-9._~-]+/o/'
                   AND (starts_with(split_part(url, '/o/', 2), 'locations%2F' || p_user_id || '%2F' || p_id::text || '%2F')
                        OR starts_with(split_part(url, '/o/', 2),
                                       'locations%2F' || p_user_id || '%2F' || upper(p_id::text) || '%2F'))))
$$;

-- Existing rows: only those with a URL outside their folder are rewritten.
ALTER TABLE locations ADD COLUMN images_outside_folder boolean NOT NULL DEFAULT false;
UPDATE locations SET images_outside_folder = true
WHERE cardinality(image_urls) > 0 AND locify_images_outside_folder(image_urls, user_id, id);

-- Kept by the database on every write that sets the URLs, whoever writes them. A statement that
-- does not set them (a tombstone, a cascade) does not call it.
CREATE FUNCTION locify_set_images_outside_folder() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.images_outside_folder := locify_images_outside_folder(NEW.image_urls, NEW.user_id, NEW.id);
    RETURN NEW;
END
$$;
CREATE TRIGGER locations_images_outside_folder
    BEFORE INSERT OR UPDATE OF image_urls, user_id, id ON locations
    FOR EACH ROW EXECUTE FUNCTION locify_set_images_outside_folder();
