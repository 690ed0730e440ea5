-- Every key on the user id, so the schema stays distributable by user (README "Sharding by
-- user_id": Citus requires each primary key and unique index of a distributed table to contain
-- its distribution column). cleanup_jobs was the one table keyed without it.
--
-- The job ids stay unique in practice (one sequence hands them out); the worker still finds a
-- job by id alone, through a plain index, which a distributed table may have.
ALTER TABLE cleanup_jobs DROP CONSTRAINT cleanup_jobs_pkey;
ALTER TABLE cleanup_jobs ADD PRIMARY KEY (user_id, id);
-- The new primary key serves what this index served (a user's jobs in order).
DROP INDEX cleanup_jobs_by_user;
CREATE INDEX cleanup_jobs_by_id ON cleanup_jobs (id);
