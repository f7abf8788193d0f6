-- schedules.overlap gains 'buffer-one', 'buffer-all' (a tick that comes
-- while the previous job is unfinished waits for it) and 'terminate' (as
-- 'cancel', but kills); schedules.buffered keeps the runs waiting, oldest
-- first, as Unix nanoseconds joined by commas (0: a run now; empty: none).

ALTER TABLE {schema}.schedules DROP CONSTRAINT schedules_overlap_check;
ALTER TABLE {schema}.schedules ADD CONSTRAINT schedules_overlap_check
    CHECK (overlap IN ('skip', 'allow', 'cancel', 'buffer-one', 'buffer-all', 'terminate'));
ALTER TABLE {schema}.schedules ADD COLUMN buffered text NOT NULL DEFAULT '';
