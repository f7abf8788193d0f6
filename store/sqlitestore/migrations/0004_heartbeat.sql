-- Hopper SQLite schema, version 4.
--
-- jobs.heartbeat_at: when the worker running a job last renewed its lease
-- (Heartbeat's now; Unix nanoseconds, 0 never). Rescue ends an interrupted
-- attempt there (store.ApplyRescue): the last time its worker was known to
-- run it, not the rescue, a lease and a rescue interval later. It is
-- written by Heartbeat only; a value older than the attempt's start is an
-- earlier attempt's, which Rescue takes for none. Adding a column with a
-- constant default rewrites nothing.

ALTER TABLE jobs ADD COLUMN heartbeat_at INTEGER NOT NULL DEFAULT 0;
