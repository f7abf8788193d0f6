-- labels: a job's metadata and tags, and those a schedule gives its jobs,
-- as JSON {"meta": {...}, "tags": [...]} (store.EncodeLabels); NULL when
-- there are none.
--
-- tags: the job's tags again, as an array, for the GIN index that finds a
-- tag's jobs (List and Count with a tag: tags @> ARRAY[tag]). Enqueue sets
-- both from the same value; a job's tags never change. The index is
-- partial: jobs without tags (NULL) have no entry and cost it nothing.

ALTER TABLE {schema}.jobs ADD COLUMN labels text, ADD COLUMN tags text[];
ALTER TABLE {schema}.schedules ADD COLUMN labels text;
CREATE INDEX jobs_tags ON {schema}.jobs USING gin (tags) WHERE tags IS NOT NULL;
