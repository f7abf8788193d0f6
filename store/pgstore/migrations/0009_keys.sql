-- Per-key flow control (docs/flow-control.md, decisions 51 and 52).
--
-- jobs.flow_key is the job's flow-control key (job.Job.Key; '' for none);
-- jobs.key_slot is true while the job's running attempt holds a slot of
-- its key (claimed while its queue had a limit per key), given back by
-- the attempt's finish or rescue. jobs_key walks a queue's available
-- keyed jobs key by key, each key's in claim order; jobs without a key
-- are not in it.
--
-- queues.key_concurrency caps the running jobs of one key (0: no limit);
-- queues.key_cursor is the key the queue's latest claim served last (the
-- next claim starts after it: keys are served in turn).
--
-- queue_keys holds one small row per key that has a state: slots held
-- (running), a pause or a hold (held_until). A row back to nothing is
-- deleted.

ALTER TABLE {schema}.jobs ADD COLUMN flow_key text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE {schema}.jobs ADD COLUMN key_slot boolean NOT NULL DEFAULT false;
CREATE INDEX jobs_key ON {schema}.jobs (queue, flow_key, priority, run_at, id)
    WHERE state = 'available' AND flow_key <> '';

ALTER TABLE {schema}.queues ADD COLUMN key_concurrency integer NOT NULL DEFAULT 0;
ALTER TABLE {schema}.queues ADD COLUMN key_cursor text COLLATE "C" NOT NULL DEFAULT '';

CREATE TABLE {schema}.queue_keys (
    queue      text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    running    integer     NOT NULL DEFAULT 0,
    paused     boolean     NOT NULL DEFAULT false,
    paused_at  timestamptz,
    held_until timestamptz,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (queue, key)
);

-- An attempt that held a slot of its key gives it back when its job leaves
-- running, whatever moves it (finish, rescue, a bulk action), or is
-- deleted; a key row left with nothing to keep is deleted (rows of passed
-- holds are collected by the claims of their queue). The triggers fire
-- only for rows with key_slot set.
CREATE FUNCTION {schema}.free_key_slot() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE {schema}.queue_keys SET running = running - 1 WHERE queue = OLD.queue AND key = OLD.flow_key;
    DELETE FROM {schema}.queue_keys WHERE queue = OLD.queue AND key = OLD.flow_key
        AND running <= 0 AND NOT paused AND held_until IS NULL;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    NEW.key_slot := false;
    RETURN NEW;
END
$$;

CREATE TRIGGER jobs_key_slot_free BEFORE UPDATE OF state ON {schema}.jobs
    FOR EACH ROW WHEN (OLD.key_slot AND NEW.state <> 'running')
    EXECUTE FUNCTION {schema}.free_key_slot();
CREATE TRIGGER jobs_key_slot_gone AFTER DELETE ON {schema}.jobs
    FOR EACH ROW WHEN (OLD.key_slot)
    EXECUTE FUNCTION {schema}.free_key_slot();
