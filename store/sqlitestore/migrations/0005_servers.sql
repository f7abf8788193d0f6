-- Hopper SQLite schema, version 5.
--
-- servers: the record of each server (a started client) working this file,
-- for `hopper servers` (store.Registry). A server inserts its row when it
-- starts, rewrites it as its heart-beat (heartbeat_at, every few seconds)
-- and deletes it when it stops cleanly; the leader deletes the rows of
-- servers that stopped beating long ago. id is the server's worker ID (the
-- jobs' worker while it runs them). Times are Unix nanoseconds.

CREATE TABLE servers (
    id           TEXT    PRIMARY KEY,
    host         TEXT    NOT NULL,
    pid          INTEGER NOT NULL,
    version      TEXT    NOT NULL,
    workers      INTEGER NOT NULL,
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL
) WITHOUT ROWID;
