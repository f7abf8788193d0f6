package hopper

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/store"
)

// Config configures a Client. The zero value is usable: an in-memory store,
// 100 workers on every queue, 25 attempts per job, exponential backoff with
// full jitter. Each field's comment gives its default.
type Config struct {
	// Store keeps the jobs. Default: a new in-memory store (memstore). Use
	// OpenSQLite for the durable default.
	Store store.Store

	// Workers registers the handlers by kind. A client without workers can
	// still enqueue and inspect jobs (and run closures).
	Workers *Workers

	// Concurrency is the number of worker goroutines (default 100, as
	// River's default per queue). Idle workers cost a parked goroutine
	// each; a claim takes at most as many jobs as there are idle workers, so
	// a larger pool also means fewer, larger transactions on a durable store.
	Concurrency int
	// Queues, if not empty, are the only queues this client works, each
	// with its own concurrency limit (0: no limit beyond Concurrency). If
	// empty, the client works every queue.
	Queues map[string]QueueConfig

	// MaxAttempts is the default for jobs that set none (default 25).
	MaxAttempts int
	// Retry is the default backoff policy (default backoff.Default:
	// exponential from 1s, doubling, capped at 1h, full jitter).
	Retry *backoff.Policy
	// JobTimeout is the default attempt timeout (default 0: none).
	JobTimeout time.Duration

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

	// CompletedRetention, CancelledRetention and DeadRetention say how long
	// finished jobs are kept (defaults 24h, 24h and 7 days; negative: forever).
	CompletedRetention time.Duration
	CancelledRetention time.Duration
	DeadRetention      time.Duration
	// DeadMaxCount caps the dead-letter queue, dropping the oldest (default
	// 10,000; negative: no cap).
	DeadMaxCount int

	// OnDead, if set, is called for every job that dies, for alerting. It
	// runs on the goroutine that recorded the death and must not block.
	OnDead func(*Job)

	// Logger receives a structured line for every transition: debug for
	// normal progress, warn for failed attempts, error for dead jobs.
	// Default: slog.Default().
	Logger *slog.Logger

	// WorkerID names this client in leases (default: host:pid:random).
	WorkerID string
}

// QueueConfig configures one queue a client works.
type QueueConfig struct {
	// MaxWorkers caps how many of the queue's jobs run at once (0: only
	// Config.Concurrency caps it).
	MaxWorkers int
}

// UniqueConflict is the policy for an Enqueue whose unique key is taken.
type UniqueConflict uint8

// The unique-conflict policies.
const (
	UniqueReturnExisting UniqueConflict = iota // return the holder's ID, Duplicate set
	UniqueError                                // fail with ErrDuplicate
)

func (c *Config) withDefaults() (Config, error) {
	cfg := *c
	if cfg.Concurrency < 0 {
		return cfg, fieldErr("Concurrency", "must not be negative, got %d", cfg.Concurrency)
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 100
	}
	for name, q := range cfg.Queues {
		if name == "" {
			return cfg, fieldErr("Queues", "queue name must not be empty")
		}
		if q.MaxWorkers < 0 {
			return cfg, fieldErr("Queues", "queue %q: MaxWorkers must not be negative", name)
		}
	}
	if cfg.MaxAttempts < 0 {
		return cfg, fieldErr("MaxAttempts", "must not be negative, got %d", cfg.MaxAttempts)
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 25
	}
	if cfg.Retry == nil {
		d := backoff.Default
		cfg.Retry = &d
	}
	if err := cfg.Retry.Validate(); err != nil {
		return cfg, fieldErr("Retry", "%v", err)
	}
	if cfg.JobTimeout < 0 {
		return cfg, fieldErr("JobTimeout", "must not be negative")
	}
	if cfg.LeaseDuration < 0 || cfg.RescueInterval < 0 {
		return cfg, fieldErr("LeaseDuration", "durations must not be negative")
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = 30 * time.Second
	}
	if cfg.LeaseDuration < 3*time.Millisecond {
		return cfg, fieldErr("LeaseDuration", "must be at least 3ms, got %s", cfg.LeaseDuration)
	}
	if cfg.MaxCrashes == 0 {
		cfg.MaxCrashes = 3
	}
	if cfg.MaxCrashes < 0 {
		cfg.MaxCrashes = 0
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
