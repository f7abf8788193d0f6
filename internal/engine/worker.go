package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/hopperq/hopper/internal/capture"
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
	var out *job.Output
	if err == nil {
		hctx, cancel := context.WithCancelCause(ctx)
		s.start(store.Lease{ID: j.ID, Claim: j.Claims}, cancel)
		if p != nil && p.hardStop.Load() {
			cancel(errShutdown)
		}
		res, out, err, cause = e.runHandler(hctx, j, h, set)
		s.end()
		cancel(nil)
	}
	// The attempt lasted from its claim, which stamped StartedAt: the
	// time it waited for this worker is a claim's hand-off, negligible.
	now := clock()
	o := decide(j, set, res, err, cause, max(now.Sub(j.StartedAt), 0), now, randFloat)
	// Compressed here, in the worker, so that the completer's Finish
	// (SQLite's writer, a PostgreSQL batch) never waits for it.
	o.Output = store.PackOutput(out)
	return o
}

// Recovered returns the error of an attempt whose handler panicked with
// r, called in the deferred function that recovered it: the panic's value
// and the stack.
func Recovered(r any) error {
	return fmt.Errorf("panic: %v\n\n%s", r, debug.Stack())
}

type jobKey struct{}

type recorderKey struct{}

// jobCtx carries the running job for JobFromContext, and the recorder of
// its attempt's output for RecorderFromContext, without an extra
// allocation beyond itself.
type jobCtx struct {
	context.Context
	j   *job.Job
	rec capture.Recorder
}

func (c *jobCtx) Value(k any) any {
	switch k {
	case jobKey{}:
		return c.j
	case recorderKey{}:
		return &c.rec
	}
	return c.Context.Value(k)
}

// RecorderFromContext returns the recorder of the output of the attempt
// a handler's context belongs to, or nil.
func RecorderFromContext(ctx context.Context) *capture.Recorder {
	r, _ := ctx.Value(recorderKey{}).(*capture.Recorder)
	return r
}

// JobFromContext returns the job a handler's context belongs to, or nil.
func JobFromContext(ctx context.Context) *job.Job {
	j, _ := ctx.Value(jobKey{}).(*job.Job)
	return j
}

// ErrTimeout is the cause of a handler context cancelled by the job's
// timeout.
var ErrTimeout = errors.New("job timed out")

// runHandler calls h on j under ctx with j's timeout, recovering a panic into an
// error carrying its stack. cause is why ctx was cancelled, if it was;
// out is what the attempt wrote (nil: nothing).
func (e *Engine) runHandler(ctx context.Context, j *job.Job, h Handler, set Settings) (res []byte, out *job.Output, err error, cause error) {
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
		jc := &jobCtx{Context: ctx, j: j}
		jc.rec.Init(set.OutputLimit, e.logHandler(), int64(j.ID), j.Kind, j.Attempt)
		defer func() { out = jc.rec.Close() }()
		res, err = h(jc, j)
	}()
	if ctx.Err() != nil {
		cause = context.Cause(ctx)
		if err != nil && errors.Is(cause, ErrTimeout) {
			err = fmt.Errorf("timed out after %s: %w", set.Timeout, err)
		}
	}
	return res, out, err, cause
}

// logHandler is the handler of the client's log that an attempt's log
// lines also go to: nil without a logger.
func (e *Engine) logHandler() slog.Handler {
	if e.cfg.Logger == nil {
		return nil
	}
	return e.cfg.Logger.Handler()
}
