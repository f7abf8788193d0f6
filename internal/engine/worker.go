package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// work runs jobs until the dispatcher closes the handoff. A job that
// arrives after Stop began is given back without running.
//
// Between jobs a worker keeps its stack. The garbage collector halves a
// goroutine's stack when less than a quarter of it is in use, and a worker
// waiting for its next job uses little of it: with many workers, every GC
// cycle shrank their stacks and the next attempt of each copied its stack
// back up (runtime.copystack was 26% of the CPU samples of
// EndToEndPostgres with 1,000 workers). keep, a frame below the loop for
// the goroutine's life, holds the idle use above that quarter for stacks
// up to 8 KiB, the size a no-op attempt grows to.
func (e *Engine) work(p *pool, s *slot) {
	var keep [stackKeep]byte
	e.workLoop(p, s, &keep)
}

// stackKeep is the stack a worker keeps in use while idle (see work).
const stackKeep = 2048

// workLoop is work's loop; keep only holds work's frame in place.
//
//go:noinline
func (e *Engine) workLoop(p *pool, s *slot, keep *[stackKeep]byte) {
	var f finished
	for done := false; ; done = true {
		j, ok := p.h.next(f, done)
		if !ok {
			return
		}
		select {
		case <-p.stopClaims:
			f = finished{j: j, outcome: released(j, 0)}
		default:
			f = finished{j: j, outcome: e.attempt(context.Background(), j, e.cfg.Now, p, s)}
		}
	}
}

// attempt runs one attempt of the claimed job j — its handler resolved, with
// its timeout, its context cancellable by Cancel, by shutdown and by a lost
// lease, panics recovered — and decides its outcome. clock stamps it; s is
// the slot that records it while it runs; p, if set, is the pool whose
// forced stop cancels it at once.
func (e *Engine) attempt(ctx context.Context, j *job.Job, clock func() time.Time, p *pool, s *slot) store.Outcome {
	h, set, err := e.cfg.Resolve(j)
	var res []byte
	var cause error
	if err == nil {
		hctx, cancel := context.WithCancelCause(ctx)
		s.start(store.Lease{ID: j.ID, Attempt: j.Attempt}, cancel)
		if p != nil && p.hardStop.Load() {
			cancel(errShutdown)
		}
		res, err, cause = run(hctx, j, h, set)
		s.end()
		cancel(nil)
	}
	// The attempt lasted from its claim, which stamped StartedAt: the
	// time it waited for this worker is a claim's hand-off, negligible.
	now := clock()
	return decide(j, set, res, err, cause, max(now.Sub(j.StartedAt), 0), now, randFloat)
}

// Recovered returns the error of an attempt whose handler panicked with
// r, called in the deferred function that recovered it: the panic's value
// and the stack.
func Recovered(r any) error {
	return fmt.Errorf("panic: %v\n\n%s", r, debug.Stack())
}

type jobKey struct{}

// jobCtx carries the running job for JobFromContext without an extra
// allocation beyond itself.
type jobCtx struct {
	context.Context
	j *job.Job
}

func (c *jobCtx) Value(k any) any {
	if k == (jobKey{}) {
		return c.j
	}
	return c.Context.Value(k)
}

// JobFromContext returns the job a handler's context belongs to, or nil.
func JobFromContext(ctx context.Context) *job.Job {
	j, _ := ctx.Value(jobKey{}).(*job.Job)
	return j
}

// ErrTimeout is the cause of a handler context cancelled by the job's
// timeout.
var ErrTimeout = errors.New("job timed out")

// run calls h on j under ctx with j's timeout, recovering a panic into an
// error carrying its stack. cause is why ctx was cancelled, if it was.
func run(ctx context.Context, j *job.Job, h Handler, set Settings) (res []byte, err error, cause error) {
	if set.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, set.Timeout, ErrTimeout)
		defer cancel()
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = Recovered(r)
			}
		}()
		res, err = h(&jobCtx{Context: ctx, j: j}, j)
	}()
	if ctx.Err() != nil {
		cause = context.Cause(ctx)
		if err != nil && errors.Is(cause, ErrTimeout) {
			err = fmt.Errorf("timed out after %s: %w", set.Timeout, err)
		}
	}
	return res, err, cause
}
