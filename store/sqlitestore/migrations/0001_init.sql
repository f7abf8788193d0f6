-- Hopper SQLite schema, version 1.
--
-- Times are INTEGER Unix nanoseconds, UTC; 0 is the zero time.
-- state: 1 scheduled, 2 available, 3 running, 4 retrying,
--        5 completed, 6 cancelled, 7 dead (the values of job.State).
-- JSON lives in TEXT columns: args, result, retry (backoff.Policy) and
-- attempts (the attempt history, a JSON array of job.Attempt, oldest first).

CREATE TABLE jobs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused, even after purge
    kind             TEXT    NOT NULL,
    queue            TEXT    NOT NULL,
    args             TEXT,
    priority         INTEGER NOT NULL DEFAULT 0,
    run_at           INTEGER NOT NULL,
    state            INTEGER NOT NULL CHECK (state BETWEEN 1 AND 7),
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

-- Claim: available jobs of a queue in claim order.
CREATE INDEX jobs_claim ON jobs (queue, priority, run_at, id) WHERE state = 2;
-- Promotion and ClaimResult.NextRunAt: scheduled and retrying jobs by run-at,
-- across all queues and within one queue.
CREATE INDEX jobs_due ON jobs (run_at) WHERE state IN (1, 4);
CREATE INDEX jobs_due_queue ON jobs (queue, run_at) WHERE state IN (1, 4);
-- Unique keys are held while a job is waiting or running.
CREATE UNIQUE INDEX jobs_unique ON jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state IN (1, 2, 3, 4);
-- A schedule's tick is enqueued at most once.
CREATE UNIQUE INDEX jobs_fire ON jobs (schedule, fire_time) WHERE schedule IS NOT NULL;
-- Rescue: running jobs by lease deadline, and by claiming store (dead workers).
CREATE INDEX jobs_lease ON jobs (lease_until) WHERE state = 3;
CREATE INDEX jobs_claimed_by ON jobs (claimed_by) WHERE state = 3;
-- Retention, purge, Stats.Finished: finished jobs by state and finish time.
CREATE INDEX jobs_finished ON jobs (state, finished_at) WHERE state IN (5, 6, 7);

-- Job counts by queue and state, kept by triggers, so that Stats does not
-- scan the jobs.
CREATE TABLE queue_counts (
    queue TEXT    NOT NULL,
    state INTEGER NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (queue, state)
) WITHOUT ROWID;

CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO queue_counts (queue, state, n) VALUES (new.queue, new.state, 1)
        ON CONFLICT (queue, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
    UPDATE queue_counts SET n = n - 1 WHERE queue = old.queue AND state = old.state;
END;

CREATE TRIGGER jobs_count_update AFTER UPDATE OF state, queue ON jobs
    WHEN old.state != new.state OR old.queue != new.queue BEGIN
    UPDATE queue_counts SET n = n - 1 WHERE queue = old.queue AND state = old.state;
    INSERT INTO queue_counts (queue, state, n) VALUES (new.queue, new.state, 1)
        ON CONFLICT (queue, state) DO UPDATE SET n = n + 1;
END;

CREATE TABLE schedules (
    name         TEXT    PRIMARY KEY,
    spec         TEXT    NOT NULL,
    time_zone    TEXT    NOT NULL DEFAULT '',
    fixed_delay  INTEGER NOT NULL DEFAULT 0,
    overlap      INTEGER NOT NULL DEFAULT 0,
    paused       INTEGER NOT NULL DEFAULT 0,
    kind         TEXT    NOT NULL,
    args         TEXT,
    queue        TEXT    NOT NULL DEFAULT '',
    priority     INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 0,
    timeout      INTEGER NOT NULL DEFAULT 0,
    retry        TEXT,
    next_run_at  INTEGER NOT NULL DEFAULT 0,
    last_fire_at INTEGER NOT NULL DEFAULT 0,
    last_job_id  INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
