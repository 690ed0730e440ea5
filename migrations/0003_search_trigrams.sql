-- GET /v1/locations?q=...: a trigram index on the search text.
--
-- `q` is a case-insensitive substring of name, address or description. The server lower-cases
-- both sides (search_text and the query) and matches with LIKE '%...%', the user's `%`, `_` and
-- `\` escaped, so the meaning is exactly a substring test. A B-tree cannot serve that; a GIN
-- trigram index can for queries of three characters or more: it hands the few rows holding every
-- trigram of the query to the LIKE recheck instead of every row of the user. Queries of one or
-- two characters have no trigram and are planned as before (the user's rows by B-tree).
--
-- pg_trgm ships with PostgreSQL's contrib (the postgresql-contrib package on Debian) and is a
-- trusted extension, so the database owner can create it without superuser rights.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE INDEX locations_live_search ON locations USING gin (search_text gin_trgm_ops) WHERE deleted_at IS NULL;
