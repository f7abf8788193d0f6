-- queues: the flow-control state of each queue that is not in the zero
-- state (store.QueueControl, docs/flow-control.md): one small row per
-- queue, deleted when the queue is back to the zero state. A claim reads it
-- inside its statement and skips a paused queue; paused_at is NULL when the
-- queue is not paused.

CREATE TABLE {schema}.queues (
    name       text COLLATE "C" PRIMARY KEY,
    paused     boolean     NOT NULL DEFAULT false,
    paused_at  timestamptz,
    updated_at timestamptz NOT NULL
);
