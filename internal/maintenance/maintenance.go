// Package maintenance runs the background services a Hopper client needs
// besides its workers: the rescuer, which gives back jobs whose worker died;
// the cleaner, which enforces retention on finished jobs and the dead-letter
// queue; and the scheduler, which fires recurring schedules.
//
// On a store that several processes share (store.Leader), the processes
// elect one leader at a time (elector.go), and only the leader's cleaner,
// scheduler and monitor act. The rescuer runs in every process: a job of a
// killed leader is given back a lease and a rescue interval after the kill,
// not after the leader's own lease too. Every maintenance write is itself a compare-and-set on the rows it
// changes (an expired lease, a schedule's next tick), so even a deposed
// leader that acts before it learns it was deposed changes nothing stale.
package maintenance

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hopperq/hopper/internal/startstop"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Config configures the services. The client fills every field; the
// services have no defaults of their own.
type Config struct {
	Store  store.Store
	Logger *slog.Logger
	// Now is the clock the loops stamp operations with.
	Now func() time.Time
	// Observe, if set, is called for each transition made here.
	Observe func(job.Event)
	// OnFire, if set, is called after a schedule fired a job: sc as it
	// was before the tick, j the job with its ID set.
	OnFire func(sc *job.Schedule, j *job.Job)
	// CancelJob, if set, cancels a job as Client.Cancel does (a waiting
	// one at once, a running one through its handler's context) and
	// reports whether it did: OverlapCancel's ticks call it on the
	// schedule's previous job.
	CancelJob func(ctx context.Context, id job.ID) (bool, error)
	// TerminateJob, if set, is CancelJob's killing form, as
	// Client.Terminate: OverlapTerminate's ticks call it.
	TerminateJob func(ctx context.Context, id job.ID) (bool, error)
	// OnRescue, if set, is called after the rescuer moved jobs (so that
	// the workers look for them).
	OnRescue func()
	// MakeJob returns the validated job that sc's tick at fireTime
	// enqueues at now; period is the time until the schedule's following
	// tick. The client resolves the job's options there as for Enqueue.
	MakeJob func(sc *job.Schedule, fireTime time.Time, period time.Duration, now time.Time) (*job.Job, error)

	RescueInterval time.Duration
	MaxCrashes     int // poison-pill threshold; 0: never

	CleanInterval      time.Duration
	CompletedRetention time.Duration // negative keeps forever
	CancelledRetention time.Duration // negative keeps forever
	DeadRetention      time.Duration // negative keeps forever
	DeadMaxCount       int           // 0 keeps all

	// NotifyJob, if set, returns the validated notification job that
	// sends n to the channel named, at now (a job of kind NotifyKind):
	// the monitor's incidents, dead jobs (NotifyDead) and catch-ups over
	// their cap are then notified. OnNotified, if set, is called after
	// notification jobs were enqueued.
	NotifyJob  func(channel string, n *job.Notification, now time.Time) (*job.Job, error)
	NotifyKind string
	OnNotified func()
	// NotifyDead runs the notifier of dead jobs (NoteDeaths; needs
	// NotifyJob).
	NotifyDead bool
	// MonitorPoll bounds how long the monitor sleeps between evaluations
	// of the schedules' monitors (it wakes at each deadline it knows).
	MonitorPoll time.Duration

	// SchedulePoll bounds how long the scheduler sleeps: it notices
	// schedules added by other processes and fixed-delay schedules whose
	// job finished within that time.
	SchedulePoll time.Duration

	// Deaths, if set, receives when the store noticed that another
	// process using it died (store.DeathWatcher): the services then
	// rescue at once, leading or not, and hold an election at once.
	Deaths <-chan struct{}

	// Leader, if set, elects one process among those sharing the store to
	// run the services; Holder names this one, and LeaderTTL is the lease
	// (renewed every third of it). Nil: this process always acts.
	Leader    store.Leader
	Holder    string
	LeaderTTL time.Duration

	// Registry, if set, keeps Server, this server's record (presence.go):
	// registered at Start with StartedAt then, again every third of
	// LeaderTTL, removed by Leave. The leader's cleaner prunes the
	// records of servers silent for ServerRetention.
	Registry        store.Registry
	Server          store.Server
	ServerRetention time.Duration
}

// Services runs the maintenance loops. Start and Stop are idempotent, and
// stopped services may start again.
type Services struct {
	cfg  Config
	log  *slog.Logger
	wake chan struct{} // the scheduler's (WakeScheduler)
	// rescueNow and cleanNow make the rescuer and the cleaner run at once,
	// when this process takes the lead: not an interval later.
	rescueNow, cleanNow chan struct{}
	// electNow makes the elector hold an election at once (after a death).
	electNow chan struct{}
	// monitorNow wakes the monitor; deadNow the notifier of dead jobs
	// (notify.go).
	monitorNow, deadNow chan struct{}
	svc                 startstop.Service
	lead                leadership
	started             time.Time // when Start last ran (under lead.mu)
}

// New returns stopped services. It panics on a Config the client could not
// have made.
func New(cfg Config) *Services {
	if cfg.Store == nil || cfg.Logger == nil || cfg.Now == nil || cfg.MakeJob == nil ||
		cfg.RescueInterval <= 0 || cfg.CleanInterval <= 0 || cfg.SchedulePoll <= 0 || cfg.MonitorPoll <= 0 ||
		cfg.NotifyDead && cfg.NotifyJob == nil ||
		cfg.Leader != nil && (cfg.Holder == "" || cfg.LeaderTTL <= 0) ||
		cfg.Registry != nil && (cfg.Server.ID == "" || cfg.LeaderTTL <= 0 || cfg.ServerRetention <= 0) {
		panic("maintenance: incomplete Config")
	}
	return &Services{cfg: cfg, log: cfg.Logger,
		wake: make(chan struct{}, 1), rescueNow: make(chan struct{}, 1), cleanNow: make(chan struct{}, 1),
		electNow: make(chan struct{}, 1), monitorNow: make(chan struct{}, 1), deadNow: make(chan struct{}, 1)}
}

// Start starts the rescuer, the cleaner, the scheduler, the monitor and
// the notifier of dead jobs.
func (s *Services) Start() {
	s.svc.Start(func(ctx context.Context) {
		var wg sync.WaitGroup
		s.lead.mu.Lock()
		s.started = s.cfg.Now()
		s.lead.mu.Unlock()
		if s.cfg.Leader != nil || s.cfg.Registry != nil {
			s.beat(ctx) // one round first, so a lone process leads (and is listed) at once
			wg.Go(func() { s.elector(ctx) })
		}
		wg.Go(func() { s.loop(ctx, s.cfg.RescueInterval, s.rescueNow, false, s.Rescue) })
		wg.Go(func() { s.loop(ctx, s.cfg.CleanInterval, s.cleanNow, true, s.Clean) })
		wg.Go(func() { s.timed(ctx, s.wake, s.cfg.SchedulePoll, s.FireDue) })
		wg.Go(func() { s.timed(ctx, s.monitorNow, s.cfg.MonitorPoll, s.CheckMonitors) })
		if s.cfg.NotifyDead {
			wg.Go(func() { s.notifier(ctx) })
		}
		if s.cfg.Deaths != nil {
			wg.Go(func() { s.watchDeaths(ctx) })
		}
		wg.Wait()
		s.resign()
	})
}

// Stop stops the loops, cancelling the store calls they are in, and waits
// for them.
func (s *Services) Stop() { s.svc.Stop() }

// WakeScheduler makes the scheduler look at the schedules now (after one
// was added, resumed or changed).
func (s *Services) WakeScheduler() { signal(s.wake) }

// tookLead runs every service at once, after this process became leader.
func (s *Services) tookLead() {
	signal(s.rescueNow)
	signal(s.cleanNow)
	signal(s.wake)
	signal(s.monitorNow)
}

// signal sends on ch, a channel of one, unless a signal is pending.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// loop runs f now, every interval after and when wake receives; with
// leaderOnly, only while this process leads.
func (s *Services) loop(ctx context.Context, every time.Duration, wake <-chan struct{}, leaderOnly bool, f func(context.Context, time.Time)) {
	run := func() {
		if now := s.cfg.Now(); !leaderOnly || s.leading(now) {
			f(ctx, now)
		}
	}
	select {
	case <-wake: // a lead taken before the loop started: run covers it
	default:
	}
	run()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			run()
		case <-wake:
			run()
		}
	}
}

// timed runs f while this process leads — the scheduler (FireDue) and the
// monitor (CheckMonitors) — then sleeps until the time f returned (the
// next tick, the earliest deadline; zero: none known), a wake-up or poll,
// whichever comes first.
func (s *Services) timed(ctx context.Context, wake <-chan struct{}, poll time.Duration, f func(context.Context, time.Time) time.Time) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-timer.C:
		}
		now := s.cfg.Now()
		var next time.Time
		if s.leading(now) {
			next = f(ctx, now)
		}
		wait := poll
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(now), 0))
		}
		timer.Stop()
		timer.Reset(wait)
	}
}

// watchDeaths rescues at once when the store reports that another process
// died, whether or not this process leads: the one that died may have been
// the leader, and a live leader may not have noticed (the store of the
// process that looks first holds the dead one's lock file while it looks).
// Rescue is a compare-and-set on expired leases, so processes rescuing at
// once give each job back once. Then it asks for an election, so that a
// dead leader's lease, which the rescue ended, is taken over at once.
func (s *Services) watchDeaths(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.cfg.Deaths:
			s.Rescue(ctx, s.cfg.Now())
			if s.cfg.Leader != nil {
				signal(s.electNow)
			}
		}
	}
}

// Rescue gives back the jobs whose lease expired before now.
func (s *Services) Rescue(ctx context.Context, now time.Time) {
	jobs, err := s.cfg.Store.Rescue(ctx, store.RescueParams{Now: now, MaxCrashes: s.cfg.MaxCrashes})
	if err != nil {
		if ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelError, "rescue jobs", slog.String("error", err.Error()))
		}
		return
	}
	if len(jobs) > 0 && s.cfg.OnRescue != nil {
		s.cfg.OnRescue()
	}
	for _, j := range jobs {
		level, t := slog.LevelWarn, job.EventRescued
		switch j.State {
		case job.StateDead:
			level, t = slog.LevelError, job.EventDead
		case job.StateCancelled:
			t = job.EventCancelled
		}
		s.log.LogAttrs(ctx, level, "job rescued", slog.Int64("job", int64(j.ID)), slog.String("kind", j.Kind),
			slog.String("queue", j.Queue), slog.Int("attempt", j.Attempt), slog.String("state", j.State.String()),
			slog.String("error", j.LastError))
		if s.cfg.Observe != nil {
			s.cfg.Observe(job.Event{Type: t, Job: j, At: now})
		}
	}
}

// Clean purges finished jobs past their retention, trims the dead-letter
// queue to its maximum size, and prunes the records of servers long
// silent.
func (s *Services) Clean(ctx context.Context, now time.Time) {
	purge := func(st job.State, keep time.Duration) {
		if keep < 0 {
			return
		}
		if _, err := s.cfg.Store.Purge(ctx, store.PurgeParams{States: []job.State{st}, Before: now.Add(-keep)}); err != nil && ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelError, "purge jobs", slog.String("state", st.String()), slog.String("error", err.Error()))
		}
	}
	s.prune(ctx)
	purge(job.StateCompleted, s.cfg.CompletedRetention)
	purge(job.StateCancelled, s.cfg.CancelledRetention)
	purge(job.StateDead, s.cfg.DeadRetention)
	if s.cfg.DeadMaxCount > 0 {
		if _, err := s.cfg.Store.Purge(ctx, store.PurgeParams{States: []job.State{job.StateDead}, KeepNewest: s.cfg.DeadMaxCount}); err != nil && ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelError, "trim dead-letter queue", slog.String("error", err.Error()))
		}
	}
	s.pruneOutputs(ctx, now)
}

// pruneOutputs deletes the outputs of each schedule's runs beyond the
// schedule's retention (job.Schedule.OutputRetention).
func (s *Services) pruneOutputs(ctx context.Context, now time.Time) {
	scheds, err := s.cfg.Store.ListSchedules(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelError, "prune outputs: list schedules", slog.String("error", err.Error()))
		}
		return
	}
	for _, sc := range scheds {
		p := store.PruneOutputsParams{Now: now, Schedule: sc.Name, Keep: sc.OutputRetention.Resolved()}
		if _, err := s.cfg.Store.PruneOutputs(ctx, p); err != nil && ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelError, "prune outputs", slog.String("schedule", sc.Name), slog.String("error", err.Error()))
		}
	}
}
