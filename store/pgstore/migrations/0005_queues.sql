-- queues: the flow-control state of each queue that is not in the zero
-- state (store.QueueControl, docs/flow-control.md): one small row per
-- queue, deleted when the queue is back to the zero state (and holds no
-- slot). A claim reads it inside its statement: it skips a paused queue,
-- and takes at most concurrency (0: no limit) less running jobs of a
-- limited queue, locking its row. running counts the attempts that hold a
-- slot of the queue: those a claim made while the queue had a limit
-- (jobs.slot); the claim adds them, and the finish or the rescue of each
-- such attempt takes it off, in the same transaction. paused_at is NULL
-- when the queue is not paused.

CREATE TABLE {schema}.queues (
    name        text COLLATE "C" PRIMARY KEY,
    paused      boolean     NOT NULL DEFAULT false,
    paused_at   timestamptz,
    concurrency integer     NOT NULL DEFAULT 0,
    running     integer     NOT NULL DEFAULT 0,
    updated_at  timestamptz NOT NULL
);

-- slot: the running attempt holds a slot of its queue's concurrency limit.
ALTER TABLE {schema}.jobs ADD COLUMN slot boolean NOT NULL DEFAULT false;
