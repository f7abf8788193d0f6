-- queue_keys_held indexes the key rows that pause or hold their key: few
-- or none at a time, among a row per key with jobs running. Every claim
-- asks which queues have one (sqlKeyedQueues, and sqlNotPaused per queue
-- it looks at), and without the index read every key row to answer: the
-- rows of all the keys running, 34–43 pages per claim with 2,000 keys
-- (decision 107). A claim or a Finish updates `running` only, which the
-- index neither holds nor tests, so those updates stay HOT.

CREATE INDEX queue_keys_held ON {schema}.queue_keys (queue) WHERE paused OR held_until IS NOT NULL;
