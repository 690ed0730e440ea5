-- Issue 35, item 3: a category deleted again while its cascade is pending settles nothing.
--
-- A pending cascade (migrations/0008) hides its locations at the stamp of the delete that
-- recorded it. That stamp was read from the category's tombstone, so a newer delete of the same
-- category, which moves the tombstone to its own stamp, had to settle the whole cascade first (in
-- its request, however many locations). Each entry of `hiding` now keeps its stamp beside it, at
-- the same position of `hiding_stamps`: the cascade settles later at the first delete's stamp,
-- as if that delete had hidden every location, whatever happens to the tombstone meanwhile.
-- (0008's "Writes settle the list first" no longer holds either: a write settles only the rows it
-- touches, `PendingCascades` says which.)
ALTER TABLE users ADD COLUMN hiding_stamps bigint[] NOT NULL DEFAULT '{}';
-- The cascades pending now were recorded by their category's current tombstone.
UPDATE users u SET hiding_stamps = ARRAY(
    SELECT COALESCE((SELECT c.change_seq FROM categories c WHERE c.user_id = u.id AND c.id = h.category), 0)
    FROM unnest(u.hiding) WITH ORDINALITY AS h(category, position)
    ORDER BY h.position)
WHERE u.hiding <> '{}';
ALTER TABLE users ADD CONSTRAINT users_hiding_stamps CHECK (cardinality(hiding_stamps) = cardinality(hiding));
