-- A Finish gives back its attempts' key slots itself, in one statement per
-- call (sqlFreeKeySlots in finish.go: kd deletes the key rows it leaves
-- with nothing to keep, ku lowers the others), and clears the jobs'
-- key_slot as it moves them: the trigger jobs_key_slot_free (migration 9)
-- fired for each job and ran two statements of its own (an UPDATE of the
-- key's row, then a DELETE of it at zero), 14 µs a job of the key rows'
-- work alone in BenchmarkKeyLimitTax (decision 111). The trigger stays for
-- every other way out of running (a rescue, a bulk action, a deletion):
-- it now fires only for a row whose key_slot the UPDATE left set, so a
-- slot is given back once, by whichever of the two moved the job.

DROP TRIGGER jobs_key_slot_free ON {schema}.jobs;
CREATE TRIGGER jobs_key_slot_free BEFORE UPDATE OF state ON {schema}.jobs
    FOR EACH ROW WHEN (OLD.key_slot AND NEW.key_slot AND NEW.state <> 'running')
    EXECUTE FUNCTION {schema}.free_key_slot();
