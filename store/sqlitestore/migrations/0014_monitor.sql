-- Hopper SQLite schema, version 14: the schedule monitor.
--
-- schedules.monitor is a schedule's job.Monitor as JSON ('' for none).
-- incidents are the monitor's problems, one open per (subject, problem):
-- resolved_at 0 while open. channels are the notification channels, each
-- a job.Channel as JSON (its secrets included: the file's permissions
-- guard them, as they guard the jobs).

ALTER TABLE schedules ADD COLUMN monitor TEXT NOT NULL DEFAULT '';

CREATE TABLE incidents (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    subject     TEXT    NOT NULL,
    problem     TEXT    NOT NULL CHECK (problem IN ('missed_start', 'over_duration', 'failing')),
    job_id      INTEGER NOT NULL DEFAULT 0,
    detail      TEXT    NOT NULL DEFAULT '',
    opened_at   INTEGER NOT NULL,
    resolved_at INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX incidents_open ON incidents (subject, problem) WHERE resolved_at = 0;
CREATE INDEX incidents_subject ON incidents (subject, id);

CREATE TABLE channels (
    name TEXT PRIMARY KEY,
    doc  TEXT NOT NULL
) WITHOUT ROWID;
