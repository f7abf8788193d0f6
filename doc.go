// Package hopper is a durable task scheduler and background-job system: an
// application hands it work to do later or elsewhere, and Hopper stores each
// job, runs it on a worker pool in priority and time order, retries failures
// with exponential backoff and jitter, moves jobs that fail permanently or
// run out of attempts to a dead-letter queue, and lets callers cancel,
// reschedule, wait for results and watch every state change.
//
// # Jobs
//
// A job has a kind (the name of its handler), JSON args, a queue, a
// priority (lower runs first; default 0; within ±1,000,000), a run-at time,
// a maximum number of attempts (at most 10,000), an optional timeout and
// unique key, and its history.
// Among jobs whose time has come, the lowest priority number runs first,
// then the earliest run-at, then the first enqueued. A job waiting for its
// time never blocks a ready one.
//
// A job is always in exactly one state: scheduled, available or retrying
// (waiting), running, completed, cancelled, or dead (the dead-letter queue).
// docs/state-machine.md draws the transitions; job.CanTransition holds them.
//
// # Handlers
//
// Handlers are registered by kind on a Workers registry, with typed args:
//
//	ws := hopper.NewWorkers()
//	hopper.Register(ws, "send_email", func(ctx context.Context, a Email) (any, error) {
//		return nil, send(ctx, a)
//	}, nil)
//
// A handler's first return value (JSON-encoded) becomes the job's result. An
// error fails the attempt: it is retried after a backoff until its attempts
// run out, then the job is dead. Wrap an error with Permanent to skip the
// remaining attempts. A panic fails the attempt with its stack recorded. A
// result returned with an error is kept in the failed attempt's record.
// A handler's context is cancelled at the job's timeout, when the job is
// cancelled, when its lease is lost, and at shutdown.
//
// Args must fit the handler's type: Enqueue refuses args that do not, and
// kinds the client has no handler for (Config.ExternalKinds lists kinds that
// other processes run). A started client claims only the kinds it can run.
//
// # Options
//
// A job's queue, priority, attempts, timeout and retry policy come from one
// type, EnqueueOptions, given at three levels: the job's own, its kind's
// (Register) and the client's (Config.Defaults); each unset field falls back
// to the next level, then to Hopper's defaults (DefaultMaxAttempts, …).
//
// A unique key (EnqueueOptions.UniqueKey) dedupes: while a job with the
// key waits or runs, an enqueue of the key returns that job. With a
// Debounce as well, it coalesces: a job waiting with the key takes the
// latest args and runs Debounce.Period after the latest enqueue, no later
// than Debounce.MaxWait after its first (EnqueueResult.Debounced), so a
// burst of enqueues gives one run with the last args.
//
// # Middleware and hooks
//
// A Middleware is a set of functions a client calls around jobs: an
// EnqueueMiddleware sees each job before it is stored and may change its
// options or metadata or refuse it; a WorkMiddleware wraps each attempt's
// handler call (context, panics, timing); hooks observe an attempt's start
// and end, a job's death and a schedule's tick without wrapping anything.
// Config.Middleware applies to every job, Workers.Use to one kind's; the
// client's run outside the kind's, each in the order given. With none set
// they cost nothing (docs/middleware.md).
//
// # Output and per-job logs
//
// Every attempt keeps what it wrote, apart from the job and compressed in
// the store: its standard output and error (the exec kind's command's, or
// what a handler writes to Stdout and Stderr), the first
// Config.OutputLimit bytes of each (1 MiB), and the lines it logged
// through Logger(ctx), a *slog.Logger whose lines (the first LogLines, up
// to LogBytes) are kept with the attempt and also go to Config.Logger
// (ExampleLogger). Client.Outputs and Client.Output read them back; hopper
// jobs get and jobs output, the API and the dashboard show them. A job's
// outputs go with the job; a schedule's runs keep theirs by its
// OutputRetention (3 successes and 10 failures by default). See
// docs/logs.md.
//
// # Clients and stores
//
// A Client enqueues, inspects and (once started) runs jobs. Its store
// decides durability: the in-memory store (the default of NewClient; also
// runs plain Go closures), or a durable store opened by URL with Open — the
// embedded SQLite store ("sqlite:app.db", package sqlitestore), where a job
// Enqueue acknowledged survives a crash. The root package links no database
// driver: importing a store's package registers its URL scheme. Every store
// implements store.Store and passes the conformance suite in store/storetest.
//
// # Stopping
//
// Stop is graceful: it stops taking jobs and lets running ones finish until
// the context it is given is done. Give it a context of its own, with the
// grace period you want — not the one a signal just cancelled:
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	client.Start()
//	<-ctx.Done()
//	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
//	defer cancel()
//	client.Stop(shutdown) // running jobs may finish for up to 30s
//
// # Time
//
// ProcessNext and RunReady run due jobs in the caller's goroutine against an
// explicit now, and FireSchedules fires recurring schedules at an explicit
// now, so tests and simulations step through hours of retries and schedules
// without waiting. The engine itself is tested inside testing/synctest
// bubbles.
//
// # Recurring schedules
//
// AddSchedule fires a job at fixed-rate intervals, fixed-delay intervals or
// cron times in a time zone (correct across DST). Each firing is an ordinary
// job keyed by (schedule, tick), so no tick is enqueued twice, even by
// several processes sharing a store.
//
// # Flow control
//
// PauseQueue pauses a queue in the store, for every process sharing it:
// its running jobs finish and none of its jobs starts until ResumeQueue,
// across restarts (ExampleClient_PauseQueue). The check is made inside
// each claim, so a worker is never handed a job of a paused queue; a held
// job stays available, and WaitReason says why it waits.
// SetQueueConcurrency caps a queue's running jobs across every process
// (ExampleClient_SetQueueConcurrency), counted by the store in the same
// transaction as every start and end of an attempt; QueueConfig.MaxWorkers
// caps them in one process. SetQueueRate throttles a queue's starts
// across every process: at most N per period with a burst, by GCRA, exact
// over any sliding window, checked in each claim's transaction at the
// store's time (ExampleClient_SetQueueRate); the excess waits, and the
// workers claim again when the throttle next allows a start. With
// Rate.Drop the excess is dropped instead: cancelled with its reason,
// never run (ExampleClient_SetQueueRate_drop). Queues lists each queue's
// state and counts.
//
// A job may carry a flow-control key (EnqueueOptions.Key: a tenant, a
// customer). SetQueueKeyConcurrency caps how many jobs of one key of a
// queue run at once across every process, and the queue serves its keys
// in turn, so one key's backlog does not sit in front of the others
// (ExampleClient_SetQueueKeyConcurrency). PauseKey pauses one key; a
// handler that meets a tenant's rate limit returns HoldKey(d) to snooze
// its job and hold its key for d. SetQueueKeyRate throttles each key of a
// queue on its own: at most N starts of one key per period with a burst,
// by GCRA with one small state per key (gone about two periods after the
// key's last start); a throttled key waits while the queue's other keys
// go on, and WaitReason says until when (ExampleClient_SetQueueKeyRate);
// with Rate.Drop a key's excess is dropped instead, cancelled with its
// reason (ExampleClient_SetQueueKeyRate_drop). See docs/flow-control.md.
package hopper
