-- Last write wins field by field (issue 36; openapi.yaml, "Writes in any order").
--
-- Each field of a record keeps the `updated_at` of the write that set it, so two devices that
-- edit different fields of one record both keep their edits. The stamps are one fixed-order
-- array of milliseconds since the epoch per row (`LocifyRules`' `CategoryField` and
-- `LocationField`: the index of a field is its `rawValue`; a new field is appended, none is ever
-- renumbered), read with the row a write reads and written by the one UPDATE that applies the
-- write: no second row version, no JSON.
--
--   categories: name, icon
--   locations:  category_id, name, address, description, coordinates (latitude and longitude),
--               is_favorite, image_urls
--
-- A record's `updated_at` is its newest field's stamp (its tombstone's time while deleted).
-- Every existing row was written whole, so each of its fields starts at the row's `updated_at`.
-- NULL is read the same way (`FieldLastWriteWins.Clock(writtenWhole:)`): a row a script inserts
-- without the column is a whole write too.
ALTER TABLE categories ADD COLUMN field_stamps bigint[];
ALTER TABLE locations ADD COLUMN field_stamps bigint[];

-- The counter triggers have nothing to count here (no category, favourite or delete changes).
SELECT set_config('locify.skip_counters', 'on', true);
UPDATE categories SET field_stamps = array_fill(floor(extract(epoch FROM updated_at) * 1000)::bigint, ARRAY[2]);
UPDATE locations SET field_stamps = array_fill(floor(extract(epoch FROM updated_at) * 1000)::bigint, ARRAY[7]);
SELECT set_config('locify.skip_counters', '', true);
