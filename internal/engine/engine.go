// Package engine runs jobs: a dispatcher claims jobs from the store as
// workers free up, a fixed pool of worker goroutines runs them with timeouts
// and panic recovery, a completer writes their outcomes back in batches, and
// a heart-beat keeps their leases alive and learns of cancellations.
//
// Every goroutine belongs to the Engine: Start starts them, Stop waits for
// them.
package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Handler runs one attempt of a job and returns its JSON result.
type Handler func(ctx context.Context, j *job.Job) (result []byte, err error)

// Settings are the per-job settings the engine needs, resolved from the job,
// its kind and the client's defaults.
type Settings struct {
	Timeout time.Duration // 0: none
	Retry   backoff.Policy
}

// Resolver finds the handler and settings of a job. An error fails the
// attempt (it is retried per the default policy).
type Resolver func(j *job.Job) (Handler, Settings, error)

// Config configures an Engine. All fields but Store and Resolve have
// defaults.
type Config struct {
	Store   store.Store
	Resolve Resolver
	// Workers is the pool size (default 10; the client passes its own).
	Workers int
	// Queues, if set, are the only queues worked.
	Queues []string
	// QueueLimits caps how many jobs of a queue run at once.
	QueueLimits map[string]int
	// Worker names this engine in leases.
	Worker string
	// LeaseDuration is the lease a claim takes (default 30s); it is renewed
	// every third of it while the job runs.
	LeaseDuration time.Duration
	// ClaimBatch caps how many jobs one claim takes (default 1000).
	ClaimBatch int
	// Logger gets a line per transition (debug; warn for failures, error
	// for dead jobs). Default: discard.
	Logger *slog.Logger
	// Observe, if set, is called for each transition the engine makes. It
	// must not block.
	Observe func(job.Event)
	// Observing, if set, reports whether Observe wants events now; when it
	// returns false the engine skips building them.
	Observing func() bool
	// Wake, if set, receives when another process may have enqueued jobs.
	Wake <-chan struct{}
}

// Engine runs jobs from a store. Create with New; Start and Stop are
// idempotent and safe for concurrent use.
type Engine struct {
	cfg    Config
	log    *slog.Logger
	jobs   chan *job.Job // dispatcher → workers
	done   chan finished // workers → completer
	wake   chan struct{} // new work may be available
	freed  chan struct{} // a worker slot was freed
	active atomic.Int64  // claimed and not yet finished
	perQ   map[string]*atomic.Int64

	mu    sync.Mutex
	slots []slot // one per worker: the job it runs, if any
	state int    // 0 new, 1 started, 2 stopping/stopped

	stopClaims chan struct{} // closed: dispatcher stops claiming
	hardStop   chan struct{} // closed: cancel running handlers
	wg         sync.WaitGroup
	workersWG  sync.WaitGroup
	stopOnce   sync.Once
	stopped    chan struct{}
	outs       []store.Outcome // the completer's buffer
	// workersDone is closed when every worker has returned.
	workersDone chan struct{}
}

// slot is what a worker is running: the job and how to cancel it.
type slot struct {
	id     job.ID // 0: idle
	cancel context.CancelCauseFunc
}

type finished struct {
	j       *job.Job
	outcome store.Outcome
	start   time.Time
}

// errCancelRequested and errShutdown are the causes with which a running
// handler's context is cancelled.
var (
	errCancelRequested = errors.New("job cancelled")
	errShutdown        = errors.New("worker shutting down")
)

// New returns an Engine; it does nothing until Start.
func New(cfg Config) *Engine {
	if cfg.Workers <= 0 {
		cfg.Workers = 10
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = 30 * time.Second
	}
	if cfg.ClaimBatch <= 0 {
		cfg.ClaimBatch = 1000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Engine{
		cfg:         cfg,
		log:         cfg.Logger,
		jobs:        make(chan *job.Job, cfg.Workers),
		done:        make(chan finished, cfg.Workers),
		wake:        make(chan struct{}, 1),
		freed:       make(chan struct{}, 1),
		slots:       make([]slot, cfg.Workers),
		stopClaims:  make(chan struct{}),
		hardStop:    make(chan struct{}),
		stopped:     make(chan struct{}),
		workersDone: make(chan struct{}),
		perQ:        make(map[string]*atomic.Int64),
	}
	for q := range cfg.QueueLimits {
		e.perQ[q] = new(atomic.Int64)
	}
	return e
}

// Start starts the dispatcher, the workers, the completer and the
// heart-beat. It returns at once; calling it again does nothing.
func (e *Engine) Start() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != 0 {
		return
	}
	e.state = 1
	for i := range e.cfg.Workers {
		e.workersWG.Add(1)
		go e.work(i)
	}
	e.wg.Add(3)
	go e.dispatch()
	go e.complete()
	go e.heartbeat()
	go func() {
		// The completer ends once every worker has.
		e.workersWG.Wait()
		close(e.workersDone)
		close(e.done)
	}()
}

// Notify tells the dispatcher that jobs may have become available.
func (e *Engine) Notify() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Stop stops claiming, waits for running jobs until ctx is done, then
// cancels those still running (they go back to waiting without losing an
// attempt) and waits for them to return. Jobs claimed but not started are
// given back at once. Stop returns when every goroutine has ended; calling
// it again waits for the first call.
func (e *Engine) Stop(ctx context.Context) {
	e.mu.Lock()
	started := e.state == 1
	e.state = 2
	e.mu.Unlock()
	e.stopOnce.Do(func() {
		close(e.stopClaims)
		if !started {
			close(e.stopped)
			return
		}
		go func() {
			e.wg.Wait()
			close(e.stopped)
		}()
	})
	select {
	case <-e.stopped:
		return
	case <-ctx.Done():
	}
	e.cancelAll()
	<-e.stopped
}

// cancelAll cancels every running handler with errShutdown.
func (e *Engine) cancelAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-e.hardStop:
	default:
		close(e.hardStop)
	}
	for _, sl := range e.slots {
		if sl.id != 0 {
			sl.cancel(errShutdown)
		}
	}
}

// CancelRunning cancels the handler of job id if this engine runs it, and
// reports whether it did. The attempt then ends cancelled.
func (e *Engine) CancelRunning(id job.ID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, sl := range e.slots {
		if sl.id == id {
			sl.cancel(errCancelRequested)
			return true
		}
	}
	return false
}

func (e *Engine) observing() bool {
	return e.cfg.Observe != nil && (e.cfg.Observing == nil || e.cfg.Observing())
}

func (e *Engine) observe(t job.EventType, j *job.Job, at time.Time) {
	if e.observing() {
		e.cfg.Observe(job.Event{Type: t, Job: j, At: at})
	}
}
