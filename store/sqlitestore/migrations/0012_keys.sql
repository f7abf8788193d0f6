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

-- An attempt that held a slot of its key gives it back when its job leaves
-- running, whatever moves it (finish, rescue, the expiry of a dead
-- worker's leases) or deletes it; a key row left with nothing to keep is
-- deleted (rows of passed holds are collected by the claims of their
-- queue).
CREATE TRIGGER jobs_key_slot_free AFTER UPDATE OF state ON jobs
WHEN old.key_slot <> 0 AND new.state <> 'running'
BEGIN
    UPDATE queue_keys SET running = running - 1 WHERE queue = old.queue AND key = old.flow_key;
    DELETE FROM queue_keys WHERE queue = old.queue AND key = old.flow_key
        AND running <= 0 AND paused = 0 AND held_until = 0;
    UPDATE jobs SET key_slot = 0 WHERE id = old.id;
END;

CREATE TRIGGER jobs_key_slot_gone AFTER DELETE ON jobs
WHEN old.key_slot <> 0
BEGIN
    UPDATE queue_keys SET running = running - 1 WHERE queue = old.queue AND key = old.flow_key;
    DELETE FROM queue_keys WHERE queue = old.queue AND key = old.flow_key
        AND running <= 0 AND paused = 0 AND held_until = 0;
END;
