package engine

import (
	"context"
	"log/slog"
	"runtime"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// maxFinishBatch caps how many outcomes one Finish call carries.
const maxFinishBatch = 1024

// complete writes the pool's outcomes to the store, as many per call as have
// queued up: with a durable store, outcomes share one commit.
func (e *Engine) complete(ctx context.Context, p *pool) {
	var batch []finished
	var reuse []*job.Job
	for {
		var ok bool
		if batch, ok = p.h.outcomes(batch, maxFinishBatch); !ok {
			return
		}
		// While a queue's concurrency limit holds jobs back, a claim
		// beside this Finish would find the slots it frees still taken:
		// the outcomes and the claim for their workers go in one store
		// call (finishFill). Quick claims already follow the Finish
		// (inline, below).
		inline := p.inline.Load()
		if fc, ok := e.cfg.Store.(store.FinishClaimer); ok && p.held.Load() && !inline {
			if full, _, err := e.finishFill(ctx, p, fc, batch, &reuse); err != nil || !full {
				p.wakeDispatcher()
			}
			// Let the workers just handed jobs run before the next
			// outcomes are taken: quick jobs then share a call.
			runtime.Gosched()
			for i := range batch {
				p.giveSpare(batch[i].j, e.cfg.Workers)
				batch[i] = finished{}
			}
			continue
		}
		// The workers of these outcomes are free already. With a durable
		// store, free their slots before the outcomes are written, so that
		// the dispatcher's claim for them runs beside this Finish (on
		// SQLite both share one transaction) instead of after it. While
		// claims are quick the completer claims itself, after Finish, and
		// its job copies are reused.
		if !inline {
			p.release(batch)
			p.wakeDispatcher()
		}
		e.finish(ctx, batch, e.cfg.Now(), false)
		if inline {
			p.release(batch)
		} else if p.held.Load() {
			// The claim for these workers ran before their attempts
			// gave back their slots of a queue's concurrency limit
			// (ClaimResult.Held): claim again now that they have.
			p.wakeDispatcher()
		}
		for i := range batch {
			p.giveSpare(batch[i].j, e.cfg.Workers) // the attempt is over: reuse its copy
			batch[i] = finished{}                  // drop references to results and errors
		}
		// Fill the freed slots at once while claims are quick (inlineClaim);
		// the dispatcher does it otherwise, and if that left any.
		if inline {
			if full, _, err := e.fill(ctx, p, &reuse); err != nil || !full {
				p.wakeDispatcher()
			}
		}
	}
}

// finishFill writes the outcomes of batch and claims for the pool's free
// workers, theirs included, in one store call, so that the claim takes the
// slots of queue concurrency limits the outcomes give back (decisions.md,
// 70). It reports what fill does. Under p.claimMu: the dispatcher claims
// nothing meanwhile. Once the pool stops claiming it only writes the
// outcomes.
func (e *Engine) finishFill(ctx context.Context, p *pool, fc store.FinishClaimer, batch []finished, reuse *[]*job.Job) (full bool, next time.Time, err error) {
	p.claimMu.Lock()
	defer p.claimMu.Unlock()
	p.release(batch)
	limit := e.claimable(p)
	if limit == 0 || len(e.cfg.Kinds) == 0 {
		e.finish(ctx, batch, e.cfg.Now(), false)
		return false, time.Time{}, nil
	}
	now := e.cfg.Now()
	r := p.takeSpare(*reuse, limit)
	var res store.ClaimResult
	var claimErr error
	_, err = e.finishWith(ctx, batch, now, false, func(fp store.FinishParams) ([]job.State, error) {
		var reached []job.State
		reached, res, claimErr = fc.FinishClaim(ctx, fp, e.claimParams(now, limit, p.room(e.cfg.QueueLimits), r))
		return reached, claimErr
	})
	if err == nil {
		e.started(res, now)
	}
	return e.filled(ctx, p, limit, r, reuse, res, claimErr)
}

// release frees the slots of the jobs of batch, whose workers have given
// back their outcomes.
func (p *pool) release(batch []finished) {
	for i := range batch {
		p.active.Add(-1)
		if c := p.perQ[batch[i].j.Queue]; c != nil {
			c.Add(-1)
		}
	}
}

// wakeDispatcher tells the dispatcher that slots are free.
func (p *pool) wakeDispatcher() {
	select {
	case p.freed <- struct{}{}:
	default:
	}
}

// finish writes outcomes at now and reports the transitions they made. With
// want (ProcessNext) it returns the jobs as the store left them (nil where
// an outcome did not apply); the pool builds them only for observers.
func (e *Engine) finish(ctx context.Context, batch []finished, now time.Time, want bool) ([]*job.Job, error) {
	return e.finishWith(ctx, batch, now, want, func(p store.FinishParams) ([]job.State, error) {
		return e.cfg.Store.Finish(ctx, p)
	})
}

// finishWith is finish with write in place of the store's Finish.
func (e *Engine) finishWith(ctx context.Context, batch []finished, now time.Time, want bool, write func(store.FinishParams) ([]job.State, error)) ([]*job.Job, error) {
	e.mu.Lock()
	outs := e.outs[:0]
	e.outs = nil
	e.mu.Unlock()
	for i := range batch {
		outs = append(outs, batch[i].outcome)
	}
	defer func() {
		clear(outs)
		e.mu.Lock()
		e.outs = outs[:0]
		e.mu.Unlock()
	}()
	reached, err := write(store.FinishParams{Now: now, Outcomes: outs})
	if err != nil {
		// The jobs stay running in the store; their leases, no longer
		// renewed, expire and the rescuer gives them back.
		e.log.LogAttrs(ctx, slog.LevelError, "finish jobs", slog.Int("jobs", len(batch)), slog.String("error", err.Error()))
		return nil, err
	}
	var after []*job.Job
	observing, scheduleJobEnded, died := e.observing(), false, false
	defer func() {
		if scheduleJobEnded && e.cfg.ScheduleJobEnded != nil {
			e.cfg.ScheduleJobEnded()
		}
		if died && e.cfg.Died != nil {
			e.cfg.Died()
		}
	}()
	if want {
		after = make([]*job.Job, len(batch))
	}
	for i := range batch {
		j, o := batch[i].j, outs[i]
		if reached[i] == 0 {
			e.log.LogAttrs(ctx, slog.LevelWarn, "job lease lost", slog.Int64("job", int64(j.ID)), slog.Int("attempt", j.Attempt))
			continue
		}
		// The store's word on the state reached: a cancel requested since
		// the claim (by another process) wins over a failure.
		j.CancelRequested = j.CancelRequested || reached[i] == job.StateCancelled && o.State != job.StateCancelled
		t := job.FinishEvent(reached[i])
		e.logJob(t, j, o.Record.Duration, o.Error)
		scheduleJobEnded = scheduleJobEnded || j.Schedule != "" && reached[i].Finished()
		died = died || reached[i] == job.StateDead
		if !want && !observing {
			continue
		}
		a := j.Clone()
		if _, err := store.ApplyFinish(a, o, now); err == nil {
			if want {
				after[i] = a
			}
			if observing {
				e.observe(t, a, now)
			}
		}
	}
	return after, nil
}

// logJob writes the structured line of a transition, if the level is on.
func (e *Engine) logJob(t job.EventType, j *job.Job, dur time.Duration, errText string) {
	level := slog.LevelDebug
	switch t {
	case job.EventRetrying:
		level = slog.LevelWarn
	case job.EventDead:
		level = slog.LevelError
	}
	ctx := context.Background()
	if !e.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.Int64("job", int64(j.ID)), slog.String("kind", j.Kind), slog.String("queue", j.Queue),
		slog.Int("attempt", j.Attempt), slog.String("worker", e.cfg.Worker),
	}
	if t != job.EventStarted {
		attrs = append(attrs, slog.Duration("duration", dur))
	}
	if errText != "" {
		attrs = append(attrs, slog.String("error", errText))
	}
	e.log.LogAttrs(ctx, level, "job "+string(t), attrs...)
}
