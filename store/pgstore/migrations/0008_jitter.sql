-- schedules.jitter_ns (0: none) delays the job of each tick by up to that
-- much, by jitter_mode (job.JitterMode by name).

ALTER TABLE {schema}.schedules ADD COLUMN jitter_ns bigint NOT NULL DEFAULT 0;
ALTER TABLE {schema}.schedules ADD COLUMN jitter_mode text NOT NULL DEFAULT 'random'
    CHECK (jitter_mode IN ('random', 'stable'));
