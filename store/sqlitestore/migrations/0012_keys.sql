-- Hopper SQLite schema, version 12.
--
-- Per-key flow control (docs/flow-control.md, decisions 51 and 52).
--
-- jobs.flow_key is the job's flow-control key (job.Job.Key; '' for none);
-- jobs.key_slot is 1 while the job's running attempt holds a slot of its
-- key (claimed while its queue had a limit per key), given back by the
-- attempt's finish or rescue. jobs_key walks a queue's available keyed
-- jobs key by key, each key's in claim order; jobs without a key are not
-- in it.
--
-- queues.key_concurrency caps the running jobs of one key (0: no limit);
-- queues.key_cursor is the key the queue's latest claim served last (the
-- next claim starts after it: keys are served in turn).
--
-- queue_keys holds one small row per key that has a state: slots held
-- (running), a pause or a hold (held_until, Unix nanoseconds, 0: none).
-- A row back to nothing is deleted. Times are Unix nanoseconds.

ALTER TABLE jobs ADD COLUMN flow_key TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN key_slot INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_key ON jobs (queue, flow_key, priority, run_at, id)
    WHERE state = 'available' AND flow_key <> '';

ALTER TABLE queues ADD COLUMN key_concurrency INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queues ADD COLUMN key_cursor TEXT NOT NULL DEFAULT '';

CREATE TABLE queue_keys (
    queue      TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    running    INTEGER NOT NULL DEFAULT 0,
    paused     INTEGER NOT NULL DEFAULT 0,
    paused_at  INTEGER NOT NULL DEFAULT 0,
    held_until INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (queue, key)
) WITHOUT ROWID;
