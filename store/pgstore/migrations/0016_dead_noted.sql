-- jobs.dead_noted is the finish time of the job's death whose
-- notifications were enqueued (Store.NoteDeaths): a dead job whose
-- dead_noted is not its finished_at is in the outbox of dead-job
-- notifications (Store.PendingDeaths), which jobs_unnoted indexes; no
-- statement but NoteDeaths writes the column, so the transitions to dead
-- are as they were (an update that sets no indexed column of
-- jobs_unnoted's stays as HOT as before). The jobs dead before this
-- version count as noted: no burst of notifications of old deaths.

ALTER TABLE {schema}.jobs ADD COLUMN dead_noted timestamptz;
UPDATE {schema}.jobs SET dead_noted = finished_at WHERE state = 'dead';
CREATE INDEX jobs_unnoted ON {schema}.jobs (id) WHERE state = 'dead' AND dead_noted IS DISTINCT FROM finished_at;
