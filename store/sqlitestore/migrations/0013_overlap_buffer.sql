-- Hopper SQLite schema, version 13.
--
-- schedules.overlap gains 'buffer-one', 'buffer-all' (a tick that comes
-- while the previous job is unfinished waits for it) and 'terminate' (as
-- 'cancel', but kills); schedules.buffered keeps the runs waiting, oldest
-- first, as Unix nanoseconds joined by commas (0: a run now; empty: none).
-- SQLite cannot change a CHECK constraint in place, so the table (one row
-- per schedule) is copied with every column of the versions before.
--
-- cancel_seq counts the cancels of running jobs: a Store that sees it
-- change (its watch, every 50ms, after PRAGMA data_version changed) renews
-- its leases at once, so a cancel requested by another process reaches
-- the job's handler promptly (store.CancelWatcher).

CREATE TABLE schedules_v14 (
    name            TEXT    PRIMARY KEY,
    spec            TEXT    NOT NULL,
    time_zone       TEXT    NOT NULL DEFAULT '',
    fixed_delay     INTEGER NOT NULL DEFAULT 0,
    overlap         TEXT    NOT NULL DEFAULT 'skip'
        CHECK (overlap IN ('skip', 'allow', 'cancel', 'buffer-one', 'buffer-all', 'terminate')),
    paused          INTEGER NOT NULL DEFAULT 0,
    kind            TEXT    NOT NULL,
    args            TEXT,
    queue           TEXT    NOT NULL DEFAULT '',
    priority        INTEGER NOT NULL DEFAULT 0,
    max_attempts    INTEGER NOT NULL DEFAULT 0,
    timeout         INTEGER NOT NULL DEFAULT 0,
    retry           TEXT,
    next_run_at     INTEGER NOT NULL DEFAULT 0,
    last_fire_at    INTEGER NOT NULL DEFAULT 0,
    last_job_id     INTEGER NOT NULL DEFAULT 0,
    skipped_ticks   INTEGER NOT NULL DEFAULT 0,
    last_skip_at    INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL DEFAULT 0,
    labels          TEXT,
    catch_up        TEXT    NOT NULL DEFAULT 'one' CHECK (catch_up IN ('one', 'none', 'latest', 'all')),
    catch_up_window INTEGER NOT NULL DEFAULT 0,
    catch_up_max    INTEGER NOT NULL DEFAULT 0,
    jitter          INTEGER NOT NULL DEFAULT 0,
    jitter_mode     TEXT    NOT NULL DEFAULT 'random' CHECK (jitter_mode IN ('random', 'stable')),
    buffered        TEXT    NOT NULL DEFAULT ''
) WITHOUT ROWID;

INSERT INTO schedules_v14 (name, spec, time_zone, fixed_delay, overlap, paused, kind, args, queue,
        priority, max_attempts, timeout, retry, next_run_at, last_fire_at, last_job_id,
        skipped_ticks, last_skip_at, created_at, labels, catch_up, catch_up_window, catch_up_max,
        jitter, jitter_mode)
    SELECT name, spec, time_zone, fixed_delay, overlap, paused, kind, args, queue,
        priority, max_attempts, timeout, retry, next_run_at, last_fire_at, last_job_id,
        skipped_ticks, last_skip_at, created_at, labels, catch_up, catch_up_window, catch_up_max,
        jitter, jitter_mode
    FROM schedules;

DROP TABLE schedules;
ALTER TABLE schedules_v14 RENAME TO schedules;

CREATE TABLE cancel_seq (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL
);
INSERT INTO cancel_seq (id, seq) VALUES (1, 0);
