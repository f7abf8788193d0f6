package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// maxFinishBatch caps how many outcomes one Finish call carries.
const maxFinishBatch = 1024

// complete writes attempt outcomes to the store, as many per call as have
// queued up: with a durable store, outcomes share one commit.
func (e *Engine) complete() {
	defer e.wg.Done()
	batch := make([]finished, 0, 64)
	for f := range e.done {
		batch = append(batch[:0], f)
	drain:
		for len(batch) < maxFinishBatch {
			select {
			case f, ok := <-e.done:
				if !ok {
					break drain
				}
				batch = append(batch, f)
			default:
				break drain
			}
		}
		e.flush(batch)
	}
}

func (e *Engine) flush(batch []finished) {
	ctx := context.Background()
	outs := e.outs[:0]
	for i := range batch {
		outs = append(outs, batch[i].outcome)
	}
	defer func() {
		clear(outs) // drop references to results and errors
		e.outs = outs[:0]
	}()
	now := time.Now()
	applied, err := e.cfg.Store.Finish(ctx, store.FinishParams{Now: now, Outcomes: outs})
	if err != nil {
		// The jobs stay running in the store; their leases, no longer
		// renewed, expire and the rescuer gives them back.
		e.log.LogAttrs(ctx, slog.LevelError, "finish jobs", slog.Int("jobs", len(batch)), slog.String("error", err.Error()))
	}
	for i := range batch {
		j := batch[i].j
		e.active.Add(-1)
		if c := e.perQ[j.Queue]; c != nil {
			c.Add(-1)
		}
		if err != nil {
			continue
		}
		o := outs[i]
		if !applied[i] {
			e.log.LogAttrs(ctx, slog.LevelWarn, "job lease lost", slog.Int64("job", int64(j.ID)), slog.Int("attempt", j.Attempt))
			continue
		}
		e.report(j, o, now)
	}
	select {
	case e.freed <- struct{}{}:
	default:
	}
}

// report logs and observes the transition an applied outcome made.
func (e *Engine) report(j *job.Job, o store.Outcome, now time.Time) *job.Job {
	t := eventOf(o.State)
	e.logJob(t, j, o.Record.Duration, o.Error)
	if !e.observing() {
		return nil
	}
	after := apply(j, o, now)
	e.observe(t, after, now)
	return after
}

func eventOf(s job.State) job.EventType {
	switch s {
	case job.StateCompleted:
		return job.EventCompleted
	case job.StateRetrying:
		return job.EventRetrying
	case job.StateDead:
		return job.EventDead
	case job.StateCancelled:
		return job.EventCancelled
	default:
		return job.EventReleased
	}
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

// heartbeat renews the leases of running jobs every third of the lease and
// cancels those whose cancellation was requested through the store (by
// another process).
func (e *Engine) heartbeat() {
	defer e.wg.Done()
	t := time.NewTicker(e.cfg.LeaseDuration / 3)
	defer t.Stop()
	ctx := context.Background()
	for {
		select {
		case <-e.stopped:
			return
		case <-e.workersDone:
			return
		case <-t.C:
		}
		var ids []job.ID
		e.mu.Lock()
		for _, sl := range e.slots {
			if sl.id != 0 {
				ids = append(ids, sl.id)
			}
		}
		e.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		now := time.Now()
		cancel, err := e.cfg.Store.Heartbeat(ctx, store.HeartbeatParams{
			Now: now, Worker: e.cfg.Worker, IDs: ids, LeaseUntil: now.Add(e.cfg.LeaseDuration),
		})
		if err != nil {
			e.log.LogAttrs(ctx, slog.LevelError, "renew leases", slog.String("error", err.Error()))
			continue
		}
		for _, id := range cancel {
			e.CancelRunning(id)
		}
	}
}

// ProcessNext claims the most urgent job due at now, runs it in the calling
// goroutine and records its outcome at now. It reports false if no job was
// due. Time is whatever the caller says it is, so tests and simulations step
// through schedules, retries and backoffs without waiting.
func (e *Engine) ProcessNext(ctx context.Context, now time.Time) (*job.Job, bool, error) {
	res, err := e.cfg.Store.Claim(ctx, store.ClaimParams{
		Now: now, Limit: 1, Worker: e.cfg.Worker, LeaseUntil: now.Add(e.cfg.LeaseDuration),
		Queues: e.cfg.Queues,
	})
	if err != nil || len(res.Jobs) == 0 {
		return nil, false, err
	}
	j := res.Jobs[0]
	e.logJob(job.EventStarted, j, 0, "")
	e.observe(job.EventStarted, j, now)
	h, set, err := e.cfg.Resolve(j)
	var out []byte
	var cause error
	if err == nil {
		out, err, cause = run(ctx, j, h, set)
	}
	o := decide(j, set, out, err, cause, 0, now, randFloat)
	applied, err := e.cfg.Store.Finish(ctx, store.FinishParams{Now: now, Outcomes: []store.Outcome{o}})
	if err != nil {
		return j, true, err
	}
	if !applied[0] {
		return j, true, job.ErrLeaseLost
	}
	e.logJob(eventOf(o.State), j, 0, o.Error)
	after := apply(j, o, now)
	e.observe(eventOf(o.State), after, now)
	return after, true, nil
}
