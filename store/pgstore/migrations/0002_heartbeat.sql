-- jobs.heartbeat_at: when the worker running a job last renewed its lease
-- (Heartbeat's now; NULL never). Rescue ends an interrupted attempt there
-- (store.ApplyRescue): the last time its worker was known to run it, not
-- the rescue, a lease and a rescue interval later. It is written by
-- Heartbeat only, in the update that renews the lease; a value older than
-- the attempt's start is an earlier attempt's, which Rescue takes for none.
-- A nullable column without a default is added without rewriting the
-- table; it is last, after the variable-width columns, as a column added
-- later must be.

ALTER TABLE {schema}.jobs ADD COLUMN heartbeat_at timestamptz;
