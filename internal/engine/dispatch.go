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

// dispatch claims jobs while workers are free and hands them to the pool. It
// claims no more than there are free workers, so when every worker is busy
// the next one to free up takes whatever is most urgent at that moment.
func (e *Engine) dispatch() {
	defer e.wg.Done()
	defer close(e.jobs)
	ctx := context.Background()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-e.stopClaims:
			return
		default:
		}
		free := e.cfg.Workers - int(e.active.Load())
		var next time.Time
		if free > 0 {
			limit := min(free, e.cfg.ClaimBatch)
			now := time.Now()
			res, err := e.cfg.Store.Claim(ctx, store.ClaimParams{
				Now:         now,
				Limit:       limit,
				Worker:      e.cfg.Worker,
				LeaseUntil:  now.Add(e.cfg.LeaseDuration),
				Queues:      e.cfg.Queues,
				QueueLimits: e.queueRoom(),
			})
			if err != nil {
				e.log.LogAttrs(ctx, slog.LevelError, "claim jobs", slog.String("error", err.Error()))
				next = now.Add(claimRetry)
			} else {
				for _, j := range res.Jobs {
					e.active.Add(1)
					if c := e.perQ[j.Queue]; c != nil {
						c.Add(1)
					}
					e.logJob(job.EventStarted, j, 0, "")
					e.observe(job.EventStarted, j, now)
					e.jobs <- j // never blocks: at most Workers jobs are active
				}
				if len(res.Jobs) == limit {
					continue // there may be more
				}
				next = res.NextRunAt
			}
		}
		var timerC <-chan time.Time
		if !next.IsZero() {
			timer.Reset(max(time.Until(next), 0))
			timerC = timer.C
		}
		select {
		case <-e.stopClaims:
			return
		case <-e.wake:
		case <-e.freed:
		case <-timerC:
		case <-e.cfg.Wake:
		}
		timer.Stop()
	}
}

// queueRoom returns how many more jobs each limited queue may start.
func (e *Engine) queueRoom() map[string]int {
	if len(e.perQ) == 0 {
		return nil
	}
	room := make(map[string]int, len(e.perQ))
	for q, n := range e.perQ {
		room[q] = max(0, e.cfg.QueueLimits[q]-int(n.Load()))
	}
	return room
}

// work runs jobs until the dispatcher closes the channel. A job that arrives
// after Stop began is given back without running.
func (e *Engine) work(slot int) {
	defer e.workersWG.Done()
	for j := range e.jobs {
		select {
		case <-e.stopClaims:
			e.done <- finished{j: j, outcome: released(j, 0)}
			continue
		default:
		}
		h, set, err := e.cfg.Resolve(j)
		start := time.Now()
		var res []byte
		var cause error
		if err == nil {
			res, err, cause = e.execute(slot, j, h, set)
		}
		now := time.Now()
		e.done <- finished{j: j, outcome: decide(j, set, res, err, cause, now.Sub(start), now, randFloat), start: start}
	}
}

// execute runs one attempt of j: with its timeout, its context cancellable
// by Cancel and by shutdown, and panics recovered. cause is why the context
// was cancelled, if it was.
func (e *Engine) execute(i int, j *job.Job, h Handler, set Settings) (res []byte, err error, cause error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	e.mu.Lock()
	e.slots[i] = slot{id: j.ID, cancel: cancel}
	select {
	case <-e.hardStop:
		cancel(errShutdown)
	default:
	}
	e.mu.Unlock()
	res, err, cause = run(ctx, j, h, set)
	e.mu.Lock()
	e.slots[i] = slot{}
	e.mu.Unlock()
	return res, err, cause
}
