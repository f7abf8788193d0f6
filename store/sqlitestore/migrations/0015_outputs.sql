-- Hopper SQLite schema, version 15.
--
-- attempt_outputs: what each attempt of a job wrote (job.Output), one row
-- per (job, attempt), apart from the jobs table so that claims and lists
-- never read it. stdout, stderr and log are gzip-compressed
-- (store.PackedOutput; NULL when empty), each *_size the bytes written to
-- the stream, those dropped over its cap included. schedule is the job's
-- (NULL: none), succeeded whether the attempt completed the job, and
-- finished_at (nanoseconds) when the attempt ended: what a schedule's
-- retention (store.PruneOutputs) counts by. A job's rows go when it is
-- deleted (the trigger; a rebuild of jobs must recreate it, as the
-- job_tags triggers).
--
-- schedules.output_retention: the schedule's job.OutputRetention as JSON,
-- NULL for the defaults.

CREATE TABLE attempt_outputs (
    job_id      INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    schedule    TEXT,
    succeeded   INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    stdout      BLOB,
    stdout_size INTEGER NOT NULL DEFAULT 0,
    stderr      BLOB,
    stderr_size INTEGER NOT NULL DEFAULT 0,
    log         BLOB,
    log_size    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, attempt)
);

CREATE INDEX attempt_outputs_schedule ON attempt_outputs (schedule, succeeded, finished_at)
    WHERE schedule IS NOT NULL;

CREATE TRIGGER attempt_outputs_delete AFTER DELETE ON jobs
BEGIN
    DELETE FROM attempt_outputs WHERE job_id = old.id;
END;

ALTER TABLE schedules ADD COLUMN output_retention TEXT;
