-- Hopper SQLite schema, version 7.
--
-- queues: the flow-control state of each queue that is not in the zero
-- state (store.QueueControl, docs/flow-control.md): one small row per
-- queue, deleted when the queue is back to the zero state. A claim reads it
-- inside its transaction and skips the lanes of a paused queue, and takes
-- at most concurrency (0: no limit) less the queue's running jobs, which
-- lane_counts holds, kept in the same transaction as every transition.
-- Times are Unix nanoseconds; paused_at is 0 when the queue is not paused.

CREATE TABLE queues (
    name       TEXT    PRIMARY KEY,
    paused     INTEGER NOT NULL DEFAULT 0,
    paused_at  INTEGER NOT NULL DEFAULT 0,
    concurrency INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
