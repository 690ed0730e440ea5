-- Clean-up jobs that can never succeed stop being retried (issue 13, item 7). A job ends as
-- 'failed_permanent' when Google answers a permanent 4xx for it (400, 404 where not "done",
-- 410, ...) or when its retries run out; it then no longer holds back the user's Auth account
-- job, and stays in the table (with attempts and last_error) for an operator to inspect or to
-- requeue: UPDATE cleanup_jobs SET state = 'pending', attempts = 0, run_after = now() WHERE id = ...
ALTER TABLE cleanup_jobs ADD COLUMN state text NOT NULL DEFAULT 'pending'
    CHECK (state IN ('pending', 'failed_permanent'));

-- The worker only looks for pending jobs.
DROP INDEX cleanup_jobs_due;
CREATE INDEX cleanup_jobs_due ON cleanup_jobs (run_after, id) WHERE state = 'pending';
