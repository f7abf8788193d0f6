-- Hopper SQLite schema, version 9.
--
-- schedules.overlap gains 'cancel' (job.OverlapCancel: a tick cancels the
-- schedule's unfinished previous job and fires). SQLite cannot change a
-- CHECK constraint in place, so the table (one row per schedule) is copied.

CREATE TABLE schedules_v9 (
    name          TEXT    PRIMARY KEY,
    spec          TEXT    NOT NULL,
    time_zone     TEXT    NOT NULL DEFAULT '',
    fixed_delay   INTEGER NOT NULL DEFAULT 0,
    overlap       TEXT    NOT NULL DEFAULT 'skip' CHECK (overlap IN ('skip', 'allow', 'cancel')),
    paused        INTEGER NOT NULL DEFAULT 0,
    kind          TEXT    NOT NULL,
    args          TEXT,
    queue         TEXT    NOT NULL DEFAULT '',
    priority      INTEGER NOT NULL DEFAULT 0,
    max_attempts  INTEGER NOT NULL DEFAULT 0,
    timeout       INTEGER NOT NULL DEFAULT 0,
    retry         TEXT,
    next_run_at   INTEGER NOT NULL DEFAULT 0,
    last_fire_at  INTEGER NOT NULL DEFAULT 0,
    last_job_id   INTEGER NOT NULL DEFAULT 0,
    skipped_ticks INTEGER NOT NULL DEFAULT 0,  -- ticks skipped since the last firing
    last_skip_at  INTEGER NOT NULL DEFAULT 0,  -- the latest of them
    created_at    INTEGER NOT NULL DEFAULT 0,
    labels        TEXT                          -- schema 6: the meta and tags a schedule gives its jobs
) WITHOUT ROWID;

INSERT INTO schedules_v9 (name, spec, time_zone, fixed_delay, overlap, paused, kind, args, queue,
        priority, max_attempts, timeout, retry, next_run_at, last_fire_at, last_job_id,
        skipped_ticks, last_skip_at, created_at, labels)
    SELECT name, spec, time_zone, fixed_delay, overlap, paused, kind, args, queue,
        priority, max_attempts, timeout, retry, next_run_at, last_fire_at, last_job_id,
        skipped_ticks, last_skip_at, created_at, labels
    FROM schedules;

DROP TABLE schedules;
ALTER TABLE schedules_v9 RENAME TO schedules;
