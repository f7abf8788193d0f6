-- Drop for a queue's throttle per key (store.QueueState.KeyRate.Drop,
-- decision 102): key_rate_drop drops each key's excess — the jobs a keyed
-- claim would start of a key but for its throttle are cancelled — instead
-- of holding it.

ALTER TABLE {schema}.queues ADD COLUMN key_rate_drop boolean NOT NULL DEFAULT false;
