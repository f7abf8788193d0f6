-- Hopper SQLite schema, version 6.
--
-- labels: a job's metadata and tags, and those a schedule gives its jobs,
-- as JSON {"meta": {...}, "tags": [...]} (store.EncodeLabels); NULL when
-- there are none.
--
-- job_tags: one row per tag of a job, so that a tag's jobs are found, in ID
-- order, without reading the others (List and Count with a tag: a range of
-- the primary key). Triggers keep it: a job's tags are set when it is
-- inserted and never change; its rows go when it is deleted (purge,
-- retention). Both triggers fire only for jobs with labels, so untagged
-- jobs cost nothing more. A junction table rather than an index on an
-- expression of labels: SQLite cannot index the elements of a JSON array.

ALTER TABLE jobs ADD COLUMN labels TEXT;
ALTER TABLE schedules ADD COLUMN labels TEXT;

CREATE TABLE job_tags (
    tag    TEXT    NOT NULL,
    job_id INTEGER NOT NULL,
    PRIMARY KEY (tag, job_id)
) WITHOUT ROWID;

CREATE TRIGGER job_tags_insert AFTER INSERT ON jobs
    WHEN new.labels IS NOT NULL AND json_type(new.labels, '$.tags') = 'array'
BEGIN
    INSERT INTO job_tags (tag, job_id) SELECT value, new.id FROM json_each(new.labels, '$.tags');
END;

CREATE TRIGGER job_tags_delete AFTER DELETE ON jobs
    WHEN old.labels IS NOT NULL AND json_type(old.labels, '$.tags') = 'array'
BEGIN
    DELETE FROM job_tags WHERE job_id = old.id AND tag IN (SELECT value FROM json_each(old.labels, '$.tags'));
END;
