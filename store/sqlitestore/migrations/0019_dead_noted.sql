-- Hopper SQLite schema, version 19.
--
-- jobs.dead_noted is the finish time of the job's death whose
-- notifications were enqueued (Store.NoteDeaths): a dead job whose
-- dead_noted is not its finished_at is in the outbox of dead-job
-- notifications (Store.PendingDeaths), which jobs_unnoted indexes; no
-- statement but NoteDeaths writes the column, so the transitions to dead
-- are as they were. The jobs dead before this version count as noted:
-- no burst of notifications of old deaths.

ALTER TABLE jobs ADD COLUMN dead_noted INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET dead_noted = finished_at WHERE state = 'dead';
CREATE INDEX jobs_unnoted ON jobs (state, id) WHERE state = 'dead' AND dead_noted != finished_at;
