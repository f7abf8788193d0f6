-- Hopper SQLite schema, version 21.
--
-- A queue's throttle per key (store.QueueState.KeyRate, decision 98): at
-- most key_rate_n starts per key_rate_period (nanoseconds) of each key of
-- the queue, key_rate_burst at once. key_rate_n = 0: none. The excess of a
-- key always waits (there is no drop per key).
--
-- Each key's GCRA state is its row (queue, key) of throttles, written by
-- the claims that start its jobs. throttles_idle finds the rows whose TAT
-- is more than a period behind, which the claims of their queue delete, so
-- that a key idle for two periods has no row and no claim reads through
-- the queue's other keys to find them.

ALTER TABLE queues ADD COLUMN key_rate_n INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queues ADD COLUMN key_rate_period INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queues ADD COLUMN key_rate_burst INTEGER NOT NULL DEFAULT 0;

CREATE INDEX throttles_idle ON throttles (queue, tat) WHERE key <> '';
