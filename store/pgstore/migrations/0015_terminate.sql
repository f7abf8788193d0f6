-- jobs.terminate_requested, with cancel_requested, says the cancel of a
-- running job is a terminate (Client.Terminate, an OverlapTerminate
-- tick): the process running it, whichever it is, kills the handler
-- (job.Job.TerminateRequested, store.HeartbeatResult.Terminate). A claim
-- clears it.

ALTER TABLE {schema}.jobs ADD COLUMN terminate_requested boolean NOT NULL DEFAULT false;
