-- servers: the record of each server (a started client) working this
-- schema, for `hopper servers` (store.Registry). A server inserts its row
-- when it starts, rewrites it as its heart-beat (heartbeat_at, every few
-- seconds) and deletes it when it stops cleanly; the leader deletes the
-- rows of servers that stopped beating long ago. id is the server's worker
-- ID (the jobs' worker while it runs them).

CREATE TABLE {schema}.servers (
    id           text COLLATE "C" PRIMARY KEY,
    host         text        NOT NULL,
    pid          integer     NOT NULL,
    version      text        NOT NULL,
    workers      integer     NOT NULL,
    started_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL
);
