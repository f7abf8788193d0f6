-- Hopper SQLite schema, version 2.
--
-- * state is stored by name ('scheduled', 'available', 'running',
--   'retrying', 'completed', 'cancelled', 'dead'; job.State.String), never
--   by number, and every statement names the states it means.
-- * Claims work per lane, one lane per (queue, kind): the claim index and
--   the index of waiting jobs are per lane, and lane_counts (replacing
--   queue_counts) counts jobs by (state, queue, kind).
-- * schedules: overlap by name ('skip', 'allow'), and the skipped ticks
--   (skipped_ticks, last_skip_at).
-- * leaders: leases for leader election among the processes sharing the
--   file (store.Leader).
--
-- SQLite cannot change a column's type, so both tables are rebuilt: a new
-- table is filled from the old one, the old one dropped (with its indexes
-- and triggers) and the new one renamed. Job IDs are kept, and so is the
-- AUTOINCREMENT sequence (IDs of purged jobs are never reused). This runs
-- inside the migration's transaction: a failure leaves the file at version 1.

CREATE TABLE jobs_v2 (
    id               INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused, even after purge
    kind             TEXT    NOT NULL,
    queue            TEXT    NOT NULL,
    args             TEXT,
    priority         INTEGER NOT NULL DEFAULT 0,
    run_at           INTEGER NOT NULL,
    state            TEXT    NOT NULL CHECK (state = 'scheduled' OR state = 'available'
                                 OR state = 'running' OR state = 'retrying' OR state = 'completed'
                                 OR state = 'cancelled' OR state = 'dead'),
    max_attempts     INTEGER NOT NULL,
    attempt          INTEGER NOT NULL DEFAULT 0,
    timeout          INTEGER NOT NULL DEFAULT 0,       -- nanoseconds
    unique_key       TEXT,                             -- NULL: none
    retry            TEXT,                             -- NULL: the kind's policy
    result           TEXT,
    last_error       TEXT    NOT NULL DEFAULT '',
    attempts         TEXT,                             -- NULL: no attempt yet
    created_at       INTEGER NOT NULL,
    started_at       INTEGER NOT NULL DEFAULT 0,
    finished_at      INTEGER NOT NULL DEFAULT 0,
    worker           TEXT,                             -- ClaimParams.Worker while running
    lease_until      INTEGER NOT NULL DEFAULT 0,
    claimed_by       TEXT,                             -- the claiming Store's WorkerID (lock file) while running
    crashes          INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    schedule         TEXT,                             -- NULL: not fired by a schedule
    fire_time        INTEGER NOT NULL DEFAULT 0
);

-- Version 1 held the numbers of job.State; any other value fails the
-- NOT NULL constraint and with it the migration.
INSERT INTO jobs_v2 (id, kind, queue, args, priority, run_at, state, max_attempts, attempt,
        timeout, unique_key, retry, result, last_error, attempts, created_at, started_at,
        finished_at, worker, lease_until, claimed_by, crashes, cancel_requested, schedule, fire_time)
    SELECT id, kind, queue, args, priority, run_at,
        CASE state WHEN 1 THEN 'scheduled' WHEN 2 THEN 'available' WHEN 3 THEN 'running'
            WHEN 4 THEN 'retrying' WHEN 5 THEN 'completed' WHEN 6 THEN 'cancelled'
            WHEN 7 THEN 'dead' END,
        max_attempts, attempt, timeout, unique_key, retry, result, last_error, attempts,
        created_at, started_at, finished_at, worker, lease_until, claimed_by, crashes,
        cancel_requested, schedule, fire_time
    FROM jobs ORDER BY id;

-- Carry the AUTOINCREMENT sequence over (it may be above the highest ID
-- left); the rename below renames its row along with the table.
DELETE FROM sqlite_sequence WHERE name = 'jobs_v2';
INSERT INTO sqlite_sequence (name, seq) SELECT 'jobs_v2', seq FROM sqlite_sequence WHERE name = 'jobs';

DROP TABLE jobs;
DROP TABLE queue_counts;
ALTER TABLE jobs_v2 RENAME TO jobs;

-- Conditions listing more than two states are written as ORs, not IN
-- lists: SQLite evaluates an IN list of more than two constants through a
-- temporary table, which it builds anew for every row written when it
-- checks a CHECK constraint or a partial index's condition (that cost 11%
-- of a batched enqueue's CPU). Queries repeat these conditions exactly, so
-- that the planner sees they imply the partial index's.

-- Claim: available jobs of a lane (queue, kind) in claim order.
CREATE INDEX jobs_claim ON jobs (queue, kind, priority, run_at, id) WHERE state = 'available';
-- Promotion and ClaimResult.NextRunAt: scheduled and retrying jobs by
-- run-at, across all lanes and within one lane.
CREATE INDEX jobs_due ON jobs (run_at) WHERE state IN ('scheduled', 'retrying');
CREATE INDEX jobs_due_lane ON jobs (queue, kind, run_at) WHERE state IN ('scheduled', 'retrying');
-- Unique keys are held while a job is waiting or running.
CREATE UNIQUE INDEX jobs_unique ON jobs (unique_key) WHERE unique_key IS NOT NULL
    AND (state = 'scheduled' OR state = 'available' OR state = 'running' OR state = 'retrying');
-- A schedule's tick is enqueued at most once.
CREATE UNIQUE INDEX jobs_fire ON jobs (schedule, fire_time) WHERE schedule IS NOT NULL;
-- Rescue: running jobs by lease deadline, and by claiming store (dead workers).
CREATE INDEX jobs_lease ON jobs (lease_until) WHERE state = 'running';
CREATE INDEX jobs_claimed_by ON jobs (claimed_by) WHERE state = 'running';
-- Retention, purge, Stats.Finished, RetryDead: finished jobs by state and finish time.
CREATE INDEX jobs_finished ON jobs (state, finished_at)
    WHERE (state = 'completed' OR state = 'cancelled' OR state = 'dead');

-- Job counts by lane and state, kept by triggers: Stats and Count do not
-- scan the jobs, and Claim reads from it the lanes with available jobs.
CREATE TABLE lane_counts (
    state TEXT    NOT NULL,
    queue TEXT    NOT NULL,
    kind  TEXT    NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (state, queue, kind)
) WITHOUT ROWID;

INSERT INTO lane_counts (state, queue, kind, n)
    SELECT state, queue, kind, count(*) FROM jobs GROUP BY state, queue, kind;

CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO lane_counts (state, queue, kind, n) VALUES (new.state, new.queue, new.kind, 1)
        ON CONFLICT (state, queue, kind) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
    UPDATE lane_counts SET n = n - 1 WHERE state = old.state AND queue = old.queue AND kind = old.kind;
END;

CREATE TRIGGER jobs_count_update AFTER UPDATE OF state, queue, kind ON jobs
    WHEN old.state != new.state OR old.queue != new.queue OR old.kind != new.kind BEGIN
    UPDATE lane_counts SET n = n - 1 WHERE state = old.state AND queue = old.queue AND kind = old.kind;
    INSERT INTO lane_counts (state, queue, kind, n) VALUES (new.state, new.queue, new.kind, 1)
        ON CONFLICT (state, queue, kind) DO UPDATE SET n = n + 1;
END;

CREATE TABLE schedules_v2 (
    name          TEXT    PRIMARY KEY,
    spec          TEXT    NOT NULL,
    time_zone     TEXT    NOT NULL DEFAULT '',
    fixed_delay   INTEGER NOT NULL DEFAULT 0,
    overlap       TEXT    NOT NULL DEFAULT 'skip' CHECK (overlap IN ('skip', 'allow')),
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
    created_at    INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Version 1 held the numbers of job.Overlap (0 skip, 1 allow).
INSERT INTO schedules_v2 (name, spec, time_zone, fixed_delay, overlap, paused, kind, args, queue,
        priority, max_attempts, timeout, retry, next_run_at, last_fire_at, last_job_id, created_at)
    SELECT name, spec, time_zone, fixed_delay, CASE overlap WHEN 0 THEN 'skip' WHEN 1 THEN 'allow' END,
        paused, kind, args, queue, priority, max_attempts, timeout, retry, next_run_at,
        last_fire_at, last_job_id, created_at
    FROM schedules;

DROP TABLE schedules;
ALTER TABLE schedules_v2 RENAME TO schedules;

-- Leader election (store.Leader): of the processes sharing the file, the
-- holder of a name's lease runs what the name stands for ('maintenance')
-- until the lease expires, unless it renews it. term grows by one at each
-- take-over; until is Unix nanoseconds (0 once the holder resigned).
CREATE TABLE leaders (
    name   TEXT    PRIMARY KEY,
    holder TEXT    NOT NULL,
    term   INTEGER NOT NULL,
    until  INTEGER NOT NULL
) WITHOUT ROWID;
