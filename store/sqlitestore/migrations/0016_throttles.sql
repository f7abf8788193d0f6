-- Hopper SQLite schema, version 16.
--
-- A queue's throttle (store.Rate, docs/flow-control.md): at most rate_n
-- starts per rate_period (nanoseconds), rate_burst at once; rate_drop
-- cancels the excess instead of holding it. rate_n = 0: no throttle.
--
-- throttles: the GCRA state of each throttle, its theoretical arrival time
-- (tat, Unix nanoseconds; 0 before the first start), keyed by (queue, key)
-- with the empty key for the queue's own, so that a per-key throttle can
-- share it. A row exists while its queue has a rate; a claim reads and
-- moves it in its write transaction.

ALTER TABLE queues ADD COLUMN rate_n INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queues ADD COLUMN rate_period INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queues ADD COLUMN rate_burst INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queues ADD COLUMN rate_drop INTEGER NOT NULL DEFAULT 0;

CREATE TABLE throttles (
    queue TEXT    NOT NULL,
    key   TEXT    NOT NULL DEFAULT '',
    tat   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, key)
) WITHOUT ROWID;
