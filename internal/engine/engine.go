// Package engine runs jobs: a dispatcher claims jobs from the store as
// workers free up, a fixed pool of worker goroutines runs them with timeouts
// and panic recovery, a completer writes their outcomes back in batches
// (and, while claims are quick, claims for the workers it freed; while a
// queue's concurrency limit holds jobs back, it claims for them in the
// same store call, store.FinishClaimer), and
// a heart-beat keeps their leases alive and learns of cancellations and lost
// leases. ProcessNext runs one job through the same steps in the caller's
// goroutine.
//
// The files follow the steps: dispatch.go (claiming), handoff.go (claimed
// jobs to the workers, outcomes to the completer), worker.go (running an
// attempt), outcome.go (deciding what follows it), complete.go (recording
// it), heartbeat.go (leases) and step.go (ProcessNext).
package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/internal/startstop"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Handler runs one attempt of a job and returns its JSON result. A result
// returned with an error is kept with the failed attempt. j is the pool's
// until the handler returns, when it is reused for another claim: a
// handler must not keep it (j.Args itself is never overwritten).
type Handler func(ctx context.Context, j *job.Job) (result []byte, err error)

// Settings are the per-job settings the engine needs, resolved from the job,
// its kind and the client's defaults.
type Settings struct {
	Timeout time.Duration // 0: none
	Retry   backoff.Policy
	// MaxSnoozes is how many snoozes in a row a job may take
	// (job.SnoozeError); a further one counts as a failed attempt.
	MaxSnoozes int
	// OutputLimit is how many bytes of an attempt's standard output, and
	// as many of its standard error, are kept (0: none).
	OutputLimit int
}

// Resolver finds the handler and settings of a job. An error fails the
// attempt (it is retried per the settings' policy).
type Resolver func(j *job.Job) (Handler, Settings, error)

// Config configures an Engine. The client fills every field; the engine has
// no defaults of its own.
type Config struct {
	Store   store.Store
	Resolve Resolver
	// Workers is the pool size.
	Workers int
	// Queues, if set, are the only queues worked.
	Queues []string
	// Kinds are the only kinds claimed: those Resolve can run. With none,
	// the engine claims nothing.
	Kinds []string
	// QueueLimits caps how many jobs of a queue run at once.
	QueueLimits map[string]int
	// Worker names this engine in leases.
	Worker string
	// LeaseDuration is the lease a claim takes; it is renewed every third
	// of it while the job runs.
	LeaseDuration time.Duration
	// Now is the clock operations are stamped with.
	Now func() time.Time
	// Logger gets a line per transition (debug; warn for failures, error
	// for dead jobs).
	Logger *slog.Logger
	// Observe, if set, is called for each transition the engine makes. It
	// must not block.
	Observe func(job.Event)
	// Observing, if set, reports whether Observe wants events now; when it
	// returns false the engine skips building them.
	Observing func() bool
	// Wake, if set, receives when another process may have enqueued jobs.
	Wake <-chan struct{}
	// Cancels, if set, tells promptly that a running job's cancel was
	// requested: the heart-beat then renews at once (heartbeat.go).
	Cancels store.CancelWatcher
	// ScheduleJobEnded, if set, is called (once per Finish call) after
	// an attempt ended a schedule's job: the scheduler may fire a run that
	// waited for it (the buffer overlap policies). It must not block.
	ScheduleJobEnded func()
	// Died, if set, is called (once per Finish call) after an attempt's
	// outcome took a job to dead, whether or not Observe wants events:
	// the dead-job notifier then looks for the death. It must not block.
	Died func()
}

// claimBatch caps how many jobs one claim takes.
const claimBatch = 1000

// flushGrace bounds how long a forced Stop waits for the last outcomes to
// be written before it cancels the store calls.
const flushGrace = 5 * time.Second

// Engine runs jobs from a store. Create with New; Start and Stop are
// idempotent and safe for concurrent use, and a stopped Engine may start
// again.
type Engine struct {
	cfg  Config
	log  *slog.Logger
	svc  startstop.Service
	wake chan struct{} // new work may be available

	running atomic.Pointer[pool] // the running pool, for Pace

	mu      sync.Mutex
	pool    *pool              // the running pool, nil when stopped
	callers map[*slot]struct{} // the slots of ProcessNext calls running
	outs    []store.Outcome    // the completer's buffer
}

// pool is the state of one run of the worker pool, from Start to Stop.
type pool struct {
	h          *handoff      // jobs to the workers, outcomes to the completer
	slots      []slot        // the attempt each worker runs
	freed      chan struct{} // a worker slot was freed
	active     atomic.Int64  // slots taken: claimed, and not yet released (complete.go)
	perQ       map[string]*atomic.Int64
	stopClaims chan struct{} // closed: the dispatcher stops claiming
	stopOnce   sync.Once
	hardStop   atomic.Bool   // handlers starting now are cancelled at once
	idle       chan struct{} // closed when every worker has returned

	claimMu sync.Mutex  // held by fill, and to close h
	closed  bool        // h is closed
	inline  atomic.Bool // the last claim was quick: the completer claims too
	held    atomic.Bool // the last claim left jobs a queue's concurrency limit held (store.ClaimResult.Held)

	spareMu sync.Mutex
	spare   []*job.Job // finished jobs' copies, for the next claim to fill

	behind  atomic.Bool   // the last claim filled every free worker (pace.go)
	credit  atomic.Int64  // enqueue calls Pace may let through while behind
	paceMu  sync.Mutex    // guards claimed
	claimed chan struct{} // closed at the next claim's end, for Pace
	// lastClaim is when the last claim ended (Unix ns); interval the
	// moving average of the time between claims that found the pool
	// behind (pace.go). Written under claimMu.
	lastClaim, interval atomic.Int64
}

// takeSpare moves up to n job copies nobody uses any more into dst[:0].
func (p *pool) takeSpare(dst []*job.Job, n int) []*job.Job {
	p.spareMu.Lock()
	defer p.spareMu.Unlock()
	k := min(n, len(p.spare))
	dst = append(dst[:0], p.spare[len(p.spare)-k:]...)
	clear(p.spare[len(p.spare)-k:])
	p.spare = p.spare[:len(p.spare)-k]
	return dst
}

// giveSpare keeps j, which nobody uses any more, for a later claim; at
// most as many as there are workers are kept.
func (p *pool) giveSpare(j *job.Job, workers int) {
	p.spareMu.Lock()
	if len(p.spare) < workers {
		p.spare = append(p.spare, j)
	}
	p.spareMu.Unlock()
}

// finished is an attempt's outcome on its way to the store.
type finished struct {
	j       *job.Job
	outcome store.Outcome
}

// The causes with which a running handler's context is cancelled.
var (
	errCancelRequested = job.ErrCancelled
	errShutdown        = errors.New("worker shutting down")
	errLeaseLost       = errors.New("job lease lost: another worker may run it")
)

// New returns an Engine; it does nothing until Start. It panics on a Config
// the client could not have made.
func New(cfg Config) *Engine {
	if cfg.Store == nil || cfg.Resolve == nil || cfg.Workers <= 0 || cfg.LeaseDuration <= 0 || cfg.Now == nil || cfg.Logger == nil {
		panic("engine: incomplete Config")
	}
	return &Engine{
		cfg:     cfg,
		log:     cfg.Logger,
		wake:    make(chan struct{}, 1),
		callers: make(map[*slot]struct{}),
	}
}

// Start starts the dispatcher, the workers, the completer and the
// heart-beat. It returns at once; calling it while running does nothing.
func (e *Engine) Start() {
	e.svc.Start(e.run)
}

// run runs one pool until it has drained (Stop) and its context is done.
func (e *Engine) run(ctx context.Context) {
	p := &pool{
		h:          newHandoff(e.cfg.Workers),
		slots:      make([]slot, e.cfg.Workers),
		freed:      make(chan struct{}, 1),
		perQ:       make(map[string]*atomic.Int64),
		stopClaims: make(chan struct{}),
		idle:       make(chan struct{}),
	}
	for q := range e.cfg.QueueLimits {
		p.perQ[q] = new(atomic.Int64)
	}
	e.mu.Lock()
	e.pool = p
	e.mu.Unlock()
	e.running.Store(p)
	// Watch for cancels before any job can start: a cancel signalled
	// before the heartbeat watched would wait for the next renewal.
	var cancels <-chan struct{}
	if w := e.cfg.Cancels; w != nil {
		ch, stop := w.WatchCancels()
		defer stop()
		cancels = ch
	}
	var workers, loops sync.WaitGroup
	for i := range e.cfg.Workers {
		workers.Go(func() { e.work(p, &p.slots[i]) })
	}
	loops.Go(func() { e.dispatch(ctx, p) })
	loops.Go(func() { e.complete(ctx, p) })
	loops.Go(func() { e.heartbeat(ctx, p, cancels) })
	workers.Wait()
	e.running.Store(nil)
	close(p.idle)
	p.h.end() // the completer ends once it has written what is left
	loops.Wait()
	e.mu.Lock()
	e.pool = nil
	e.mu.Unlock()
}

// Notify tells the dispatcher that jobs may have become available.
func (e *Engine) Notify() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Stop stops claiming and lets running jobs finish until ctx is done; then
// it cancels those still running (they go back to waiting without losing an
// attempt) and waits for their handlers to return. Jobs claimed but not
// started are given back at once. Outcomes are written with the store
// calls' own context, which Stop cancels once everything is written — or,
// after ctx is done, at the latest flushGrace later, so that a hung store
// cannot hold Stop. Stop returns when every goroutine has ended.
func (e *Engine) Stop(ctx context.Context) {
	e.mu.Lock()
	p := e.pool
	e.mu.Unlock()
	done := e.svc.Done()
	if p != nil {
		p.stopOnce.Do(func() { close(p.stopClaims) })
		select {
		case <-done:
		case <-ctx.Done():
			p.hardStop.Store(true)
			e.cancelAll(errShutdown)
			select {
			case <-done:
			case <-time.After(flushGrace):
			}
		}
	}
	e.svc.Stop()
}

func (e *Engine) observing() bool {
	return e.cfg.Observe != nil && (e.cfg.Observing == nil || e.cfg.Observing())
}

func (e *Engine) observe(t job.EventType, j *job.Job, at time.Time) {
	if e.observing() {
		e.cfg.Observe(job.Event{Type: t, Job: j, At: at})
	}
}

// Busy returns how many of the pool's slots are taken: jobs claimed whose
// workers have not given their outcome back, and (with the memory store)
// outcomes not yet written; 0 when the pool is stopped.
func (e *Engine) Busy() int {
	e.mu.Lock()
	p := e.pool
	e.mu.Unlock()
	if p == nil {
		return 0
	}
	return int(p.active.Load())
}
