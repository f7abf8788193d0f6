-- Hopper SQLite schema, version 3.
--
-- lane_counts is kept by the store itself, in the transaction that changes
-- the jobs (counts.go), no longer by triggers: a group-commit transaction
-- then writes each row of lane_counts once, summed over its jobs, rather
-- than two trigger statements per job and transition. The counts are
-- recomputed from the jobs, so that the file is right afterwards whatever
-- it held.

DROP TRIGGER jobs_count_insert;
DROP TRIGGER jobs_count_update;
DROP TRIGGER jobs_count_delete;

DELETE FROM lane_counts;
INSERT INTO lane_counts (state, queue, kind, n)
    SELECT state, queue, kind, count(*) FROM jobs GROUP BY state, queue, kind;
