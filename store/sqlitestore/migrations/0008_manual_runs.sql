-- Hopper SQLite schema, version 8.
--
-- A run now of a schedule (hopper.Client.RunSchedule) is a job with its
-- schedule and no tick: fire_time 0 (job.Job.Manual). Only ticks are
-- unique per (schedule, fire_time), so jobs_fire leaves fire_time 0 out;
-- a schedule may have any number of manual runs. Lookups of a tick repeat
-- the condition (sqlFired) so that they use the index.

DROP INDEX jobs_fire;
CREATE UNIQUE INDEX jobs_fire ON jobs (schedule, fire_time) WHERE schedule IS NOT NULL AND fire_time != 0;
