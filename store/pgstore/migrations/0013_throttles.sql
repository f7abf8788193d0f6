-- A queue's throttle (store.Rate, docs/flow-control.md): at most rate_n
-- starts per rate_period (nanoseconds), rate_burst at once; rate_drop
-- cancels the excess instead of holding it. rate_n = 0: no throttle.
--
-- throttles: the GCRA state of each throttle, its theoretical arrival time
-- (tat, Unix nanoseconds; 0 before the first start), keyed by (queue, key)
-- with the empty key for the queue's own, so that a per-key throttle can
-- share it. A row exists while its queue has a rate; a claim locks it
-- (FOR UPDATE, in queue order), reads it and moves it in its statement.

ALTER TABLE {schema}.queues ADD COLUMN rate_n integer NOT NULL DEFAULT 0;
ALTER TABLE {schema}.queues ADD COLUMN rate_period bigint NOT NULL DEFAULT 0;
ALTER TABLE {schema}.queues ADD COLUMN rate_burst integer NOT NULL DEFAULT 0;
ALTER TABLE {schema}.queues ADD COLUMN rate_drop boolean NOT NULL DEFAULT false;

CREATE TABLE {schema}.throttles (
    queue text COLLATE "C" NOT NULL,
    key   text COLLATE "C" NOT NULL DEFAULT '',
    tat   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, key)
);
