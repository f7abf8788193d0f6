-- attempt_outputs: what each attempt of a job wrote (job.Output), one row
-- per (job, attempt), apart from the jobs table so that claims and lists
-- never read it. stdout, stderr and log are gzip-compressed
-- (store.PackedOutput; NULL when empty; stored as they are: PostgreSQL's
-- own TOAST compression is off for them), each *_size the bytes written
-- to the stream, those dropped over its cap included. schedule is the
-- job's (NULL: none), succeeded whether the attempt completed the job,
-- and finished_at when the attempt ended: what a schedule's retention
-- (store.PruneOutputs) counts by. A job's rows go when it is deleted (the
-- foreign key cascades).
--
-- schedules.output_retention: the schedule's job.OutputRetention as JSON,
-- NULL for the defaults.

CREATE TABLE {schema}.attempt_outputs (
    job_id      bigint NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    attempt     int NOT NULL,
    schedule    text COLLATE "C",
    succeeded   boolean NOT NULL,
    finished_at timestamptz NOT NULL,
    stdout      bytea,
    stdout_size bigint NOT NULL DEFAULT 0,
    stderr      bytea,
    stderr_size bigint NOT NULL DEFAULT 0,
    log         bytea,
    log_size    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, attempt)
);

ALTER TABLE {schema}.attempt_outputs ALTER COLUMN stdout SET STORAGE EXTERNAL,
    ALTER COLUMN stderr SET STORAGE EXTERNAL, ALTER COLUMN log SET STORAGE EXTERNAL;

CREATE INDEX attempt_outputs_schedule ON {schema}.attempt_outputs (schedule, succeeded, finished_at)
    WHERE schedule IS NOT NULL;

ALTER TABLE {schema}.schedules ADD COLUMN output_retention jsonb;
