-- schedules.overlap gains 'cancel' (job.OverlapCancel: a tick cancels the
-- schedule's unfinished previous job and fires).

ALTER TABLE {schema}.schedules DROP CONSTRAINT schedules_overlap_check;
ALTER TABLE {schema}.schedules ADD CONSTRAINT schedules_overlap_check
    CHECK (overlap IN ('skip', 'allow', 'cancel'));
