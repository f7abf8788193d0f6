-- The schedule monitor. schedules.monitor is a schedule's job.Monitor as
-- JSON (NULL for none). incidents are the monitor's problems, one open per
-- (subject, problem): resolved_at NULL while open. channels are the
-- notification channels, each a job.Channel as JSON (its secrets included:
-- the database's access rules guard them, as they guard the jobs).

ALTER TABLE {schema}.schedules ADD COLUMN monitor jsonb;

CREATE TABLE {schema}.incidents (
    id          bigserial PRIMARY KEY,
    subject     text NOT NULL,
    problem     text NOT NULL CHECK (problem IN ('missed_start', 'over_duration', 'failing')),
    job_id      bigint NOT NULL DEFAULT 0,
    detail      text NOT NULL DEFAULT '',
    opened_at   timestamptz NOT NULL,
    resolved_at timestamptz
);
CREATE UNIQUE INDEX incidents_open ON {schema}.incidents (subject, problem) WHERE resolved_at IS NULL;
CREATE INDEX incidents_subject ON {schema}.incidents (subject, id);

CREATE TABLE {schema}.channels (
    name text PRIMARY KEY,
    doc  jsonb NOT NULL
);
