-- Hopper SQLite schema, version 22.
--
-- Drop for a queue's throttle per key (store.QueueState.KeyRate.Drop,
-- decision 102): key_rate_drop <> 0 drops each key's excess — the jobs a
-- claim would start of a key but for its throttle are cancelled — instead
-- of holding it.

ALTER TABLE queues ADD COLUMN key_rate_drop INTEGER NOT NULL DEFAULT 0;
