// Package maintenance runs the background services a Hopper client needs
// besides its workers: the rescuer, which gives back jobs whose worker died;
// the cleaner, which enforces retention on finished jobs and the dead-letter
// queue; and the scheduler, which fires recurring schedules.
package maintenance

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Config configures the services. Zero durations take the defaults named.
type Config struct {
	Store  store.Store
	Logger *slog.Logger
	// Observe, if set, is called for each transition made here.
	Observe func(job.Event)
	// OnFire, if set, is called after a schedule fired a job.
	OnFire func(id job.ID)
	// OnRescue, if set, is called after the rescuer moved jobs (so that
	// the workers look for them).
	OnRescue func()

	RescueInterval time.Duration // default 10s
	MaxCrashes     int           // poison-pill threshold; 0: never

	CleanInterval      time.Duration // default 1m
	CompletedRetention time.Duration // default 24h; negative keeps forever
	CancelledRetention time.Duration // default 24h; negative keeps forever
	DeadRetention      time.Duration // default 7 days; negative keeps forever
	DeadMaxCount       int           // default 10,000; negative keeps all

	// DefaultMaxAttempts applies to fired jobs whose schedule sets none
	// (default 25).
	DefaultMaxAttempts int

	// SchedulePoll bounds how long the scheduler sleeps (default 1s): it
	// notices schedules added by other processes and fixed-delay schedules
	// whose job finished within that time.
	SchedulePoll time.Duration
}

// Services runs the maintenance loops. Start and Stop are idempotent.
type Services struct {
	cfg     Config
	log     *slog.Logger
	wake    chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	started bool
	stopped bool
}

// New returns stopped services.
func New(cfg Config) *Services {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.RescueInterval, 10*time.Second)
	def(&cfg.CleanInterval, time.Minute)
	def(&cfg.CompletedRetention, 24*time.Hour)
	def(&cfg.CancelledRetention, 24*time.Hour)
	def(&cfg.DeadRetention, 7*24*time.Hour)
	def(&cfg.SchedulePoll, time.Second)
	if cfg.DefaultMaxAttempts <= 0 {
		cfg.DefaultMaxAttempts = 25
	}
	if cfg.DeadMaxCount == 0 {
		cfg.DeadMaxCount = 10000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Services{cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

// Start starts the loops.
func (s *Services) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return
	}
	s.started = true
	s.wg.Add(3)
	go s.loop(s.cfg.RescueInterval, s.Rescue)
	go s.loop(s.cfg.CleanInterval, s.Clean)
	go s.scheduler()
}

// Stop stops the loops and waits for them.
func (s *Services) Stop() {
	s.mu.Lock()
	if !s.stopped {
		s.stopped = true
		close(s.stop)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// WakeScheduler makes the scheduler look at the schedules now (after one
// was added, resumed or changed).
func (s *Services) WakeScheduler() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Services) loop(every time.Duration, f func(context.Context, time.Time)) {
	defer s.wg.Done()
	ctx := context.Background()
	f(ctx, time.Now())
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			f(ctx, time.Now())
		}
	}
}

// Rescue gives back the jobs whose lease expired before now.
func (s *Services) Rescue(ctx context.Context, now time.Time) {
	jobs, err := s.cfg.Store.Rescue(ctx, store.RescueParams{Now: now, MaxCrashes: s.cfg.MaxCrashes})
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "rescue jobs", slog.String("error", err.Error()))
		return
	}
	if len(jobs) > 0 && s.cfg.OnRescue != nil {
		s.cfg.OnRescue()
	}
	for _, j := range jobs {
		level, t := slog.LevelWarn, job.EventRescued
		if j.State == job.StateDead {
			level, t = slog.LevelError, job.EventDead
		}
		s.log.LogAttrs(ctx, level, "job rescued", slog.Int64("job", int64(j.ID)), slog.String("kind", j.Kind),
			slog.String("queue", j.Queue), slog.Int("attempt", j.Attempt), slog.String("state", j.State.String()),
			slog.String("error", j.LastError))
		if s.cfg.Observe != nil {
			s.cfg.Observe(job.Event{Type: t, Job: j, At: now})
		}
	}
}

// Clean purges finished jobs past their retention and trims the
// dead-letter queue to its maximum size.
func (s *Services) Clean(ctx context.Context, now time.Time) {
	purge := func(st job.State, keep time.Duration) {
		if keep < 0 {
			return
		}
		if _, err := s.cfg.Store.Purge(ctx, store.PurgeParams{States: []job.State{st}, Before: now.Add(-keep)}); err != nil {
			s.log.LogAttrs(ctx, slog.LevelError, "purge jobs", slog.String("state", st.String()), slog.String("error", err.Error()))
		}
	}
	purge(job.StateCompleted, s.cfg.CompletedRetention)
	purge(job.StateCancelled, s.cfg.CancelledRetention)
	purge(job.StateDead, s.cfg.DeadRetention)
	if s.cfg.DeadMaxCount > 0 {
		if _, err := s.cfg.Store.Purge(ctx, store.PurgeParams{States: []job.State{job.StateDead}, KeepNewest: s.cfg.DeadMaxCount}); err != nil {
			s.log.LogAttrs(ctx, slog.LevelError, "trim dead-letter queue", slog.String("error", err.Error()))
		}
	}
}
