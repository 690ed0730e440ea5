-- Last write wins in any arrival order (issue 22; openapi.yaml, "Writes in any order").
--
-- Where a location is shown follows the current state of the category its own last write named:
-- while that category is deleted with a reassign, its locations are shown in the reassign target
-- (categories.reassigned_to, followed from category to category); while it is deleted with a
-- cascade, they are shown deleted (`hidden`: a tombstone whose own last write is not a delete,
-- kept under the category it names). A newer write that brings the category back brings them
-- back. Nothing here changes a location's own clock (`updated_at`), so a write to it is judged
-- against its own last write whenever it arrives.
--
-- own_category_id is the category a location's own last write named when it is shown in another
-- one (NULL otherwise, as for every row written before this migration): adding it rewrites no row.
ALTER TABLE locations ADD COLUMN own_category_id uuid;
ALTER TABLE locations ADD COLUMN hidden boolean NOT NULL DEFAULT false;
ALTER TABLE categories ADD COLUMN reassigned_to uuid;

-- The locations that follow a category whose state changed, beside the live ones
-- (locations_live_by_category_created): those shown elsewhere, and those hidden with it. Both
-- are rare, so the partial indexes cost the ordinary writes nothing.
CREATE INDEX locations_shown_elsewhere ON locations (user_id, own_category_id) WHERE own_category_id IS NOT NULL;
CREATE INDEX locations_hidden ON locations (user_id, category_id) WHERE hidden;
