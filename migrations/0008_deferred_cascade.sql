-- Issue 23, item 3: a cascade hides its locations after the delete has answered.
--
-- Deleting a live category without a reassign tombstones the category and records it in the
-- user's `hiding` list, in the delete's transaction; its locations are turned into tombstones
-- later, by the background worker or by the user's next write, whichever comes first
-- (`PendingCascades`). Each hidden location takes the stamp of the category's tombstone, as if the
-- delete had hidden it. Until then every read treats the locations shown in a category of the
-- list as deleted: listings, reads by id and searches leave them out, and the change feed
-- delivers them as tombstones at that stamp. Writes settle the list first, so the write path
-- never meets a live location in a deleted category.
ALTER TABLE users ADD COLUMN hiding uuid[] NOT NULL DEFAULT '{}';
CREATE INDEX users_hiding ON users (id) WHERE hiding <> '{}';

-- The listing's indexes carry each row's category, so a listing leaves out the categories being
-- hidden in the index-only scan that finds its page.
DROP INDEX locations_live_by_created;
DROP INDEX locations_live_by_updated;
DROP INDEX locations_live_by_name;
DROP INDEX locations_live_by_favorite_created;
CREATE INDEX locations_live_by_created ON locations (user_id, created_at DESC, id) INCLUDE (category_id)
    WHERE deleted_at IS NULL;
CREATE INDEX locations_live_by_updated ON locations (user_id, updated_at DESC, id) INCLUDE (category_id)
    WHERE deleted_at IS NULL;
CREATE INDEX locations_live_by_name ON locations (user_id, name_key, id) INCLUDE (category_id) WHERE deleted_at IS NULL;
CREATE INDEX locations_live_by_favorite_created
    ON locations (user_id, is_favorite, created_at DESC, id) INCLUDE (category_id) WHERE deleted_at IS NULL;
