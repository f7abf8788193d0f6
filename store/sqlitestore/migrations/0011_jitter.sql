-- Hopper SQLite schema, version 11.
--
-- schedules.jitter (nanoseconds, 0: none) delays the job of each tick by
-- up to that much, by jitter_mode (job.JitterMode by name).

ALTER TABLE schedules ADD COLUMN jitter INTEGER NOT NULL DEFAULT 0;
ALTER TABLE schedules ADD COLUMN jitter_mode TEXT NOT NULL DEFAULT 'random'
    CHECK (jitter_mode IN ('random', 'stable'));
