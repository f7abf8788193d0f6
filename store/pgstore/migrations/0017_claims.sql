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
-- made before it. A column with a constant default is added without
-- rewriting the table (PostgreSQL 11 and later keep the default in the
-- catalog).

ALTER TABLE {schema}.jobs ADD COLUMN claims bigint NOT NULL DEFAULT 0;
