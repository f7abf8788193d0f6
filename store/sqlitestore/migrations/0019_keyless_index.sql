-- jobs_key covers every available job (decision 86): the jobs without a
-- key are its entries with flow_key = '', so that a keyed queue's claim
-- reads its keyless jobs in claim order through the index, however many
-- keyed jobs wait before them (they were read through jobs_claim,
-- filtered: a scan of the keyed backlog).

DROP INDEX jobs_key;
CREATE INDEX jobs_key ON jobs (queue, flow_key, priority, run_at, id) WHERE state = 'available';
