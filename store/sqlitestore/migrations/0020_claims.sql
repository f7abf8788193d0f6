-- Hopper SQLite schema, version 20.
--
-- jobs.claims counts a job's claims (job.Job.Claims): every claim adds
-- one — a snoozed or released attempt, whose number the next claim uses
-- again, is counted here too — and nothing lowers it. While the job runs
-- it names the claim under way, and Finish and Heartbeat apply only to the
-- claim they name (store.Outcome.Claim, store.Lease): an outcome or a
-- renewal for an earlier claim of the job is refused even when the
-- attempt number is the same (decision 97).
--
-- Existing rows start at 0, running ones included: every claim after this
-- migration gives 1 or more, so no lease given from now on names a claim
-- made before it. Adding a column with a constant default rewrites
-- nothing.

ALTER TABLE jobs ADD COLUMN claims INTEGER NOT NULL DEFAULT 0;
