package hopper

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Hopper's defaults, in one place: Config.withDefaults applies them once,
// and every other package receives the resulting values.
const (
	DefaultConcurrency        = 100 // workers per client, as River's default per queue
	DefaultMaxAttempts        = 25  // attempts per job, as River and Sidekiq
	DefaultLeaseDuration      = 30 * time.Second
	DefaultRescueInterval     = 10 * time.Second
	DefaultMaxCrashes         = 3
	DefaultMaxSnoozes         = 100
	DefaultOutputLimit        = 1 << 20 // bytes of an attempt's stdout, and of its stderr, kept
	DefaultCompletedRetention = 24 * time.Hour
	DefaultCancelledRetention = 24 * time.Hour
	DefaultDeadRetention      = 7 * 24 * time.Hour
	DefaultDeadMaxCount       = 10_000
	DefaultQueue              = job.DefaultQueue
	// MinScheduledTimeout is the least timeout a job fired by a schedule
	// gets when nothing sets one: see ScheduleOptions.
	MinScheduledTimeout = time.Minute
	// MinLeaseDuration bounds Config.LeaseDuration: renewed every third
	// of it, a lease needs a millisecond between renewals.
	MinLeaseDuration = 3 * time.Millisecond
	// MaxConcurrency bounds Config.Concurrency: each worker is a goroutine
	// with buffers of its own.
	MaxConcurrency = 10_000
	// MaxAttemptsLimit bounds EnqueueOptions.MaxAttempts, and MinPriority
	// and MaxPriority bound EnqueueOptions.Priority, the same on every
	// store (see package job).
	MaxAttemptsLimit = job.MaxAttemptsLimit
	MinPriority      = job.MinPriority
	MaxPriority      = job.MaxPriority
	// MaxMetaSize bounds EnqueueOptions.Meta (bytes of keys and values),
	// MaxTags and MaxTagSize EnqueueOptions.Tags (see package job).
	MaxMetaSize = job.MaxMetaSize
	MaxTags     = job.MaxTags
	MaxTagSize  = job.MaxTagSize
)

// Intervals of the maintenance services. The leader's lease is renewed
// every third of leaderTTL, so a new leader takes over at most
// leaderTTL+leaderTTL/3 after the last one died.
const (
	cleanInterval = time.Minute
	schedulePoll  = time.Second
	leaderTTL     = 10 * time.Second
	// monitorPoll bounds the monitor's sleep: a change made by another
	// process (a job that started, finished) is seen within it.
	monitorPoll = 5 * time.Second
)

// Config configures a Client. The zero value is usable: an in-memory store,
// 100 workers on every queue, 25 attempts per job, exponential backoff with
// full jitter. Each field's comment gives its default.
type Config struct {
	// Store keeps the jobs. Default: a new in-memory store (memstore),
	// closed by Stop. Open opens a durable store by URL; a Store given
	// here is the caller's to close.
	Store store.Store

	// Workers registers the handlers by kind. A client without workers can
	// still enqueue and inspect jobs (and run closures).
	Workers *Workers

	// Concurrency is the number of worker goroutines (default 100, at most
	// MaxConcurrency). Idle workers cost a parked goroutine each; a claim
	// takes at most as many jobs as there are idle workers, so a larger
	// pool also means fewer, larger transactions on a durable store.
	Concurrency int
	// Queues, if not empty, are the only queues this client works, each
	// with its own concurrency limit (0: no limit beyond Concurrency). If
	// empty, the client works every queue.
	Queues map[string]QueueConfig

	// Defaults are the options of jobs that leave a field unset in their
	// own options and their kind's: each field is taken from the job, else
	// its kind (Register), else here, else Hopper's defaults — queue
	// "default", 25 attempts, backoff.Default, no timeout. Delay, RunAt
	// and UniqueKey are per job and must be zero here.
	Defaults EnqueueOptions

	// ExternalKinds are kinds that other processes run. A client with
	// workers refuses to enqueue or schedule a kind it has no handler for
	// (a typo would otherwise wait forever), unless the kind is listed
	// here. A client without workers enqueues any kind.
	ExternalKinds []string

	// UniqueConflict says what Enqueue does when a job's unique key is held
	// by an unfinished job: return the existing job's ID with Duplicate set
	// (UniqueReturnExisting, the default), or fail with ErrDuplicate.
	UniqueConflict UniqueConflict

	// LeaseDuration is how long a claimed job is owned without a renewal
	// (default 30s). Workers renew every third of it; a job whose worker
	// died is given back after it expires (at once on SQLite when the dead
	// process is detected).
	LeaseDuration time.Duration
	// RescueInterval is how often expired leases are looked for (default 10s).
	RescueInterval time.Duration
	// MaxCrashes sends a job to the dead-letter queue after its worker died
	// under it this many times in a row: a poison pill (default 3;
	// negative: never).
	MaxCrashes int
	// MaxSnoozes is how many times in a row a job's handler may snooze it
	// (Snooze) without the attempt counting; a further snooze counts as a
	// failed attempt, retried or dead-lettered as any failure, so that no
	// handler (nor a server it calls answering 429 forever) keeps a job
	// waiting without end (default 100; negative: never snooze, every
	// snooze counts).
	MaxSnoozes int

	// OutputLimit is how many bytes of each attempt's standard output, and
	// as many of its standard error, are kept with the attempt (Output):
	// the first ones; what follows is counted, not kept (default 1 MiB,
	// DefaultOutputLimit; negative: none kept). The exec kind's command
	// writes them; a handler may write to Stdout and Stderr. An attempt's
	// log lines (Logger) have bounds of their own: LogLines and LogBytes.
	OutputLimit int
	// KindOutputLimits overrides OutputLimit for the kinds it names (0:
	// OutputLimit; negative: none kept). Default: none.
	KindOutputLimits map[string]int

	// CompletedRetention, CancelledRetention and DeadRetention say how long
	// finished jobs are kept (defaults 24h, 24h and 7 days; negative: forever).
	CompletedRetention time.Duration
	CancelledRetention time.Duration
	DeadRetention      time.Duration
	// DeadMaxCount caps the dead-letter queue, dropping the oldest (default
	// 10,000; negative: no cap).
	DeadMaxCount int

	// Middleware are called around every job's enqueue and attempts, and
	// their hooks on its events, before the middleware of its kind
	// (Workers.Use), in the order given: see Middleware. Default: none.
	Middleware []Middleware

	// OnDead, if set, is called for every job that dies, for alerting. It
	// runs where OnEvent does and must not block.
	OnDead func(*Job)
	// NotifyDeadJobs enqueues a notification job (NotifyKind) for every
	// job that dies (not a notification job itself), to the notification
	// channels that take job_dead events: those taking every subject, and
	// those its schedule's monitor names. The store keeps each death
	// unnoted until its notifications are enqueued, in the same step that
	// notes it (an outbox: store.Monitoring.NoteDeaths), so a death is
	// notified once per channel, even when the process where the job died
	// was killed before, and however many clients share the store. A
	// client with NotifyDeadJobs looks for unnoted deaths — any process's
	// — when it starts, at once after a death in its own workers, and
	// every 5 seconds. Default off.
	NotifyDeadJobs bool

	// OnEvent, if set, is called for every transition this client makes —
	// its workers', its maintenance services' and its own calls' — before
	// subscribers see it, and never dropped: for metrics. It runs on the
	// goroutine that made the transition, except when a transition of the
	// workers must follow the report of one of the client's calls still in
	// flight (a job's start, its enqueue's): then it is held back, without
	// holding the workers up, and runs later on a goroutine of the client,
	// in order. It must be fast and must not block.
	OnEvent func(Event)
	// OnStoreCall, if set, is called after every store operation the
	// client makes, with the operation's name ("claim", "finish", …), how
	// long it took and its error: for metrics. It must be fast and must
	// not block.
	OnStoreCall func(op string, took time.Duration, err error)

	// Logger receives a structured line for every transition: debug for
	// normal progress, warn for failed attempts, error for dead jobs.
	// Default: slog.Default().
	Logger *slog.Logger

	// Remote configures the remote workers this client serves
	// (RegisterWorker, FetchJobs…; the HTTP worker protocol). The zero
	// value is usable.
	Remote RemoteOptions

	// WorkerID names this client in leases (default: the store's own name
	// for this process if it has one, else host:pid:random).
	WorkerID string
}

// QueueConfig configures one queue a client works.
type QueueConfig struct {
	// MaxWorkers caps how many of the queue's jobs run at once in this
	// client (0: only Config.Concurrency caps it): how many of its
	// handlers run. On a durable store a job whose handler has returned
	// stays running in the store until its outcome is committed, so the
	// store may briefly count more of them.
	MaxWorkers int
}

// UniqueConflict is the policy for an Enqueue whose unique key is taken.
type UniqueConflict uint8

// The unique-conflict policies.
const (
	UniqueReturnExisting UniqueConflict = iota // return the holder's ID, Duplicate set
	UniqueError                                // fail with ErrDuplicate
)

// Validate reports the first bad field of c as NewClient would, as a
// *FieldError naming it ("Config.LeaseDuration"), without opening
// anything: for a program that reads its settings from flags or a file.
func (c *Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

// withDefaults validates c and returns it with every default applied. A bad
// field is a *FieldError naming it.
func (c *Config) withDefaults() (Config, error) {
	cfg := *c
	switch {
	case cfg.Concurrency < 0 || cfg.Concurrency > MaxConcurrency:
		return cfg, fieldErr("Concurrency", "must be between 0 (default %d) and %d, got %d", DefaultConcurrency, MaxConcurrency, cfg.Concurrency)
	case cfg.Concurrency == 0:
		cfg.Concurrency = DefaultConcurrency
	}
	for name, q := range cfg.Queues {
		if err := job.CheckName("queue", name); err != nil {
			return cfg, fieldErr("Queues", "queue %q: %v", name, err)
		}
		if q.MaxWorkers < 0 {
			return cfg, fieldErr("Queues", "queue %q: MaxWorkers must not be negative", name)
		}
	}
	if err := cfg.Defaults.validate("Config.Defaults.", false); err != nil {
		return cfg, err
	}
	if err := cfg.Defaults.checkShared("Config.Defaults."); err != nil {
		return cfg, err
	}
	d := &cfg.Defaults
	if d.Queue == "" {
		d.Queue = DefaultQueue
	}
	if d.MaxAttempts == 0 {
		d.MaxAttempts = DefaultMaxAttempts
	}
	if d.Retry == nil {
		p := backoff.Default
		d.Retry = &p
	}
	for _, k := range cfg.ExternalKinds {
		if err := job.CheckName("kind", k); err != nil {
			return cfg, fieldErr("ExternalKinds", "%v", err)
		}
	}
	for _, f := range []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"LeaseDuration", &cfg.LeaseDuration, DefaultLeaseDuration},
		{"RescueInterval", &cfg.RescueInterval, DefaultRescueInterval},
	} {
		if *f.d < 0 {
			return cfg, fieldErr(f.name, "must not be negative, got %s", *f.d)
		}
		if *f.d == 0 {
			*f.d = f.def
		}
	}
	if cfg.LeaseDuration < MinLeaseDuration {
		return cfg, fieldErr("LeaseDuration", "must be at least %s, got %s", MinLeaseDuration, cfg.LeaseDuration)
	}
	switch {
	case cfg.MaxCrashes == 0:
		cfg.MaxCrashes = DefaultMaxCrashes
	case cfg.MaxCrashes < 0:
		cfg.MaxCrashes = 0 // never
	}
	switch {
	case cfg.OutputLimit == 0:
		cfg.OutputLimit = DefaultOutputLimit
	case cfg.OutputLimit < 0:
		cfg.OutputLimit = 0 // none kept
	}
	switch {
	case cfg.MaxSnoozes == 0:
		cfg.MaxSnoozes = DefaultMaxSnoozes
	case cfg.MaxSnoozes < 0:
		cfg.MaxSnoozes = 0 // every snooze counts
	}
	for _, r := range []struct {
		d   *time.Duration
		def time.Duration
	}{
		{&cfg.CompletedRetention, DefaultCompletedRetention},
		{&cfg.CancelledRetention, DefaultCancelledRetention},
		{&cfg.DeadRetention, DefaultDeadRetention},
	} {
		if *r.d == 0 {
			*r.d = r.def
		}
	}
	switch {
	case cfg.DeadMaxCount == 0:
		cfg.DeadMaxCount = DefaultDeadMaxCount
	case cfg.DeadMaxCount < 0:
		cfg.DeadMaxCount = 0 // no cap
	}
	switch r := cfg.Remote; {
	case len(r.Key) > 0 && len(r.Key) < 32:
		return cfg, fieldErr("Remote.Key", "must be at least 32 bytes, got %d", len(r.Key))
	case r.MaxWorkers < 0:
		return cfg, fieldErr("Remote.MaxWorkers", "must not be negative")
	case r.MaxLongPolls < 0:
		return cfg, fieldErr("Remote.MaxLongPolls", "must not be negative")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Workers == nil {
		cfg.Workers = NewWorkers()
	}
	return cfg, nil
}

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: "Config." + field, Reason: fmt.Sprintf(format, args...)}
}
