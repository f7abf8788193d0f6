package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// claimRetry is how long the dispatcher waits after the store failed a claim.
const claimRetry = time.Second

// inlineClaim: while claims take less than this, the completer claims for
// the workers its outcomes free (fill) instead of waking the dispatcher to
// do it. With the memory store (claims of microseconds) that spares a
// goroutine hand-off per batch: 1.2–1.4× the jobs per second end to end. A
// durable store's claim waits for a commit; there the completer stays free
// to write the next outcomes while the dispatcher claims (doing both in
// the completer cost PostgreSQL 13–15% end to end).
const inlineClaim = 200 * time.Microsecond

// claim claims up to limit jobs at now from the engine's queues and kinds,
// with at most room[q] from a limited queue q, and reports each start.
func (e *Engine) claim(ctx context.Context, now time.Time, limit int, room map[string]int, reuse []*job.Job) (store.ClaimResult, error) {
	if len(e.cfg.Kinds) == 0 {
		return store.ClaimResult{}, nil // nothing this engine could run
	}
	res, err := e.cfg.Store.Claim(ctx, e.claimParams(now, limit, room, reuse))
	if err != nil {
		return res, err
	}
	e.started(res, now)
	return res, nil
}

// claimParams are the store's arguments of a claim (see claim).
func (e *Engine) claimParams(now time.Time, limit int, room map[string]int, reuse []*job.Job) store.ClaimParams {
	return store.ClaimParams{
		Now:         now,
		Limit:       limit,
		Worker:      e.cfg.Worker,
		LeaseUntil:  now.Add(e.cfg.LeaseDuration),
		Queues:      e.cfg.Queues,
		Kinds:       e.cfg.Kinds,
		QueueLimits: room,
		Reuse:       reuse,
	}
}

// started reports the claim res made at now: the jobs it dropped (a
// throttle's rate-and-drop) and the starts of those it claimed.
func (e *Engine) started(res store.ClaimResult, now time.Time) {
	observing := e.observing()
	for _, j := range res.Dropped {
		e.logJob(job.EventCancelled, j, 0, j.LastError)
		if observing {
			e.cfg.Observe(job.Event{Type: job.EventCancelled, Job: j, At: now})
		}
	}
	for _, j := range res.Jobs {
		e.logJob(job.EventStarted, j, 0, "")
		if observing {
			// A copy: the pool reuses j once the attempt is recorded.
			e.cfg.Observe(job.Event{Type: job.EventStarted, Job: j.Clone(), At: now})
		}
	}
}

// dispatch claims jobs while workers are free and hands them to the pool. It
// claims no more than there are free workers, so when every worker is busy
// the next one to free up takes whatever is most urgent at that moment.
// The completer fills the slots its outcomes free itself (fill); the
// dispatcher claims when woken otherwise (new jobs, a due time, a fill that
// left slots free).
func (e *Engine) dispatch(ctx context.Context, p *pool) {
	defer func() {
		p.claimMu.Lock()
		p.closed = true
		p.h.close()
		p.claimMu.Unlock()
	}()
	var reuse []*job.Job // job copies offered to the store's claim
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-p.stopClaims:
			return
		default:
		}
		var next time.Time
		full, due, err := e.fill(ctx, p, &reuse)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			next = e.cfg.Now().Add(claimRetry)
		} else if full {
			continue // there may be more
		} else {
			next = due
		}
		var timerC <-chan time.Time
		if !next.IsZero() {
			timer.Reset(max(next.Sub(e.cfg.Now()), 0))
			timerC = timer.C
		}
		select {
		case <-p.stopClaims:
			return
		case <-ctx.Done():
			return
		case <-e.wake:
		case <-p.freed:
		case <-timerC:
		case <-e.cfg.Wake:
		}
		timer.Stop()
		// Wake-ups that came together (an enqueue's own and the store's
		// notification of it) are answered by the one claim that follows.
		for drained := false; !drained; {
			select {
			case <-e.wake:
			case <-p.freed:
			case <-e.cfg.Wake:
			default:
				drained = true
			}
		}
	}
}

// fill claims jobs for the pool's free workers, at most claimBatch, and
// hands them out. It reports whether it filled as many as it asked for
// (there may be more), and otherwise when the next job will be due (zero:
// unknown). Under p.claimMu, so that the dispatcher and the completer never
// claim more than there are free workers between them; once the pool
// stops claiming it claims nothing.
func (e *Engine) fill(ctx context.Context, p *pool, reuse *[]*job.Job) (full bool, next time.Time, err error) {
	p.claimMu.Lock()
	defer p.claimMu.Unlock()
	limit := e.claimable(p)
	if limit == 0 {
		return false, time.Time{}, nil
	}
	now := e.cfg.Now()
	r := p.takeSpare(*reuse, limit)
	began := time.Now()
	res, err := e.claim(ctx, now, limit, p.room(e.cfg.QueueLimits), r)
	// A failed claim leaves the retries to the dispatcher's pace.
	p.inline.Store(err == nil && time.Since(began) < inlineClaim)
	return e.filled(ctx, p, limit, r, reuse, res, err)
}

// claimable returns how many jobs the pool may claim now (0: none, or
// the pool stops claiming). Under p.claimMu.
func (e *Engine) claimable(p *pool) int {
	select {
	case <-p.stopClaims:
		return 0
	default:
	}
	if p.closed {
		return 0
	}
	return max(0, min(e.cfg.Workers-int(p.active.Load()), claimBatch))
}

// filled hands out the jobs of res, a claim of up to limit jobs that was
// offered the copies r (err: it failed), and gives back the copies it did
// not fill; reuse keeps r's array for the next claim. Under p.claimMu. It
// returns what fill does.
func (e *Engine) filled(ctx context.Context, p *pool, limit int, r []*job.Job, reuse *[]*job.Job, res store.ClaimResult, err error) (full bool, next time.Time, _ error) {
	for i, j := range r {
		if i >= len(res.Jobs) || res.Jobs[i] != j {
			p.giveSpare(j, e.cfg.Workers) // not filled by the store
		}
	}
	clear(r)
	*reuse = r
	p.paced(err == nil && len(res.Jobs) == limit, len(res.Jobs))
	if err != nil {
		if ctx.Err() == nil {
			e.log.LogAttrs(ctx, slog.LevelError, "claim jobs", slog.String("error", err.Error()))
		}
		return false, time.Time{}, err
	}
	for _, j := range res.Jobs {
		p.active.Add(1)
		if c := p.perQ[j.Queue]; c != nil {
			c.Add(1)
		}
	}
	p.held.Store(res.Held)
	p.h.push(res.Jobs)
	// A claim that dropped jobs (a queue over its rate) may have left more
	// behind them: claim again. A throttle that held jobs back says when
	// it next allows a start: claim then.
	return len(res.Jobs) == limit || len(res.Dropped) > 0, WakeAt(res), nil
}

// WakeAt is when to claim again after res, for jobs that are not ready
// yet: the earlier of its next run-at and the time a throttle that held
// jobs back allows a start (zero: neither).
func WakeAt(res store.ClaimResult) time.Time {
	switch {
	case res.ThrottledUntil.IsZero():
		return res.NextRunAt
	case res.NextRunAt.IsZero() || res.ThrottledUntil.Before(res.NextRunAt):
		return res.ThrottledUntil
	}
	return res.NextRunAt
}

// room returns how many more jobs each limited queue may start.
func (p *pool) room(limits map[string]int) map[string]int {
	if len(p.perQ) == 0 {
		return nil
	}
	room := make(map[string]int, len(p.perQ))
	for q, n := range p.perQ {
		room[q] = max(0, limits[q]-int(n.Load()))
	}
	return room
}
