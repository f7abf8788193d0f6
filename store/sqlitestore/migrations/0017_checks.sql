-- Hopper SQLite schema, version 17: external checks (job.Check).
--
-- checks: each check as JSON (store.EncodeCheck: its settings and the
-- state pings change), its ping ID unique. pings: each check's ping log
-- (store.EncodePing), at most the latest N kept per check, by seq.
-- incidents is rebuilt to take the problem 'check_down'.

CREATE TABLE checks (
    name    TEXT PRIMARY KEY,
    ping_id TEXT NOT NULL UNIQUE,
    doc     TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE pings (
    check_name TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    doc        TEXT    NOT NULL,
    PRIMARY KEY (check_name, seq)
) WITHOUT ROWID;

CREATE TABLE incidents_new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    subject     TEXT    NOT NULL,
    problem     TEXT    NOT NULL CHECK (problem IN ('missed_start', 'over_duration', 'failing', 'check_down')),
    job_id      INTEGER NOT NULL DEFAULT 0,
    detail      TEXT    NOT NULL DEFAULT '',
    opened_at   INTEGER NOT NULL,
    resolved_at INTEGER NOT NULL DEFAULT 0
);
INSERT INTO incidents_new (id, subject, problem, job_id, detail, opened_at, resolved_at)
    SELECT id, subject, problem, job_id, detail, opened_at, resolved_at FROM incidents;
DROP TABLE incidents;
ALTER TABLE incidents_new RENAME TO incidents;
CREATE UNIQUE INDEX incidents_open ON incidents (subject, problem) WHERE resolved_at = 0;
CREATE INDEX incidents_subject ON incidents (subject, id);
