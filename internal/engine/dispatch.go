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

// claim claims up to limit jobs at now from the engine's queues and kinds,
// with at most room[q] from a limited queue q, and reports each start.
func (e *Engine) claim(ctx context.Context, now time.Time, limit int, room map[string]int, reuse []*job.Job) (store.ClaimResult, error) {
	if len(e.cfg.Kinds) == 0 {
		return store.ClaimResult{}, nil // nothing this engine could run
	}
	res, err := e.cfg.Store.Claim(ctx, store.ClaimParams{
		Now:         now,
		Limit:       limit,
		Worker:      e.cfg.Worker,
		LeaseUntil:  now.Add(e.cfg.LeaseDuration),
		Queues:      e.cfg.Queues,
		Kinds:       e.cfg.Kinds,
		QueueLimits: room,
		Reuse:       reuse,
	})
	if err != nil {
		return res, err
	}
	observing := e.observing()
	for _, j := range res.Jobs {
		e.logJob(job.EventStarted, j, 0, "")
		if observing {
			// A copy: the pool reuses j once the attempt is recorded.
			e.cfg.Observe(job.Event{Type: job.EventStarted, Job: j.Clone(), At: now})
		}
	}
	return res, nil
}

// dispatch claims jobs while workers are free and hands them to the pool. It
// claims no more than there are free workers, so when every worker is busy
// the next one to free up takes whatever is most urgent at that moment.
func (e *Engine) dispatch(ctx context.Context, p *pool) {
	defer close(p.jobs)
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
		free := e.cfg.Workers - int(p.active.Load())
		var next time.Time
		if free > 0 {
			limit := min(free, claimBatch)
			now := e.cfg.Now()
			reuse = p.takeSpare(reuse, limit)
			res, err := e.claim(ctx, now, limit, p.room(e.cfg.QueueLimits), reuse)
			for i, j := range reuse {
				if i >= len(res.Jobs) || res.Jobs[i] != j {
					p.giveSpare(j, e.cfg.Workers) // not filled by the store
				}
			}
			clear(reuse)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				e.log.LogAttrs(ctx, slog.LevelError, "claim jobs", slog.String("error", err.Error()))
				next = now.Add(claimRetry)
			} else {
				for _, j := range res.Jobs {
					p.active.Add(1)
					if c := p.perQ[j.Queue]; c != nil {
						c.Add(1)
					}
					p.jobs <- j // never blocks: at most Workers jobs are active
				}
				if len(res.Jobs) == limit {
					continue // there may be more
				}
				next = res.NextRunAt
			}
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
	}
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
