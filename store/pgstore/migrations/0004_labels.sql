-- labels: a job's metadata and tags, and those a schedule gives its jobs,
-- as JSON {"meta": {...}, "tags": [...]} (store.EncodeLabels); NULL when
-- there are none. tags: the job's tags again, as an array, set from the
-- same value by the INSERT (NULL: none), for the triggers below.
--
-- job_tags: one row per tag of a job, so that a tag's jobs are found in ID
-- order without reading the others: a page of a tag's jobs walks the
-- primary key (tag, job_id) and stops after a page, whatever the tag's
-- share of the jobs; a count reads the tag's range. Row triggers keep it,
-- and fire only for jobs with tags: untagged jobs cost nothing more. A
-- job's tags never change. (A GIN index on tags was measured first: a page
-- of a tag on half of 1M jobs is a bitmap scan and a sort of all of them,
-- seconds; decision 61.)

ALTER TABLE {schema}.jobs ADD COLUMN labels text, ADD COLUMN tags text[];
ALTER TABLE {schema}.schedules ADD COLUMN labels text;

CREATE TABLE {schema}.job_tags (
    tag    text COLLATE "C" NOT NULL,
    job_id bigint NOT NULL,
    PRIMARY KEY (tag, job_id)
);

CREATE FUNCTION {schema}.job_tags_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {schema}.job_tags (tag, job_id) SELECT t, NEW.id FROM unnest(NEW.tags) AS t;
    RETURN NULL;
END $$;

CREATE FUNCTION {schema}.job_tags_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {schema}.job_tags WHERE tag = ANY (OLD.tags) AND job_id = OLD.id;
    RETURN NULL;
END $$;

CREATE TRIGGER job_tags_insert AFTER INSERT ON {schema}.jobs
    FOR EACH ROW WHEN (NEW.tags IS NOT NULL) EXECUTE FUNCTION {schema}.job_tags_insert();
CREATE TRIGGER job_tags_delete AFTER DELETE ON {schema}.jobs
    FOR EACH ROW WHEN (OLD.tags IS NOT NULL) EXECUTE FUNCTION {schema}.job_tags_delete();
