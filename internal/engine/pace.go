package engine

import (
	"context"
	"time"
)

// Back-pressure on enqueue.
//
// Producers that enqueue one job per call as fast as they can compete with
// the pool for the store (the SQLite writer, the memory store's lock) and
// for the CPU, and they are many goroutines against one dispatcher and one
// completer: with the memory store, 8 producers flat out left 100 no-op
// workers a fifth of what they inserted, the backlog growing without bound
// (issue 19). So while the pool is behind — its last claim found more jobs
// due than it had free workers for, and a worker is free again — an
// enqueue call waits, before it stores its jobs, until the pool has
// started a job for each call let through since it fell behind (bounded,
// below): the workers get their share of the store and the CPU, and a job
// waits less in a shorter queue. The client paces only calls that store
// one job: what crowds the workers out is many small calls (each a lock
// taken, a request to the writer); batches are few calls, and an ingest
// in batches of 1,000 would otherwise wait for a claim per batch (on
// SQLite it cut the pre-filled benchmark's insert rate by a fifth).
//
// The cost falls on enqueues made while jobs wait for free workers: one
// claim's time (microseconds in memory, a round trip or a commit on a
// durable store), never more than the bound below. Nothing while the pool
// keeps up or every worker is busy (slow handlers: the backlog is theirs,
// not the producers'), and nothing for a client whose pool is not running.
//
// The bound follows the pool's own pace: a held call waits for the next
// claim at most four times the time between the pool's claims while it is
// behind (a moving average), at least paceMin; each claim that ends
// without a job for it starts that wait again; and it waits paceMax at
// most in all. A fixed bound of 10 ms let every held call through by
// timeout before the claim that was to pay for it ended, once claims came
// further apart than that — on PostgreSQL flat out, claims 20–40 ms apart,
// a third of the held calls — and the back-pressure then slowed the
// producers without bounding them: the backlog grew by what the timeouts
// let through (issue 19: with 32 producers, 741 calls/s by timeout and a
// backlog growing 703/s, worked/inserted 0.71). The bounds are there for a
// pool that stops claiming (a store call that hangs).

// Pace holds an enqueue at most paceMax in all, and waits for the pool's
// next claim paceCycles of its claim interval, at least paceMin.
const (
	paceMin    = 10 * time.Millisecond
	paceMax    = time.Second
	paceCycles = 4
)

// Pace returns, when the pool is behind, once the pool has started a job
// for each call Pace let through since it fell behind, this one included,
// or no claim ended for paceCycles of the pool's claim interval (at least
// paceMin), or paceMax has passed; at once otherwise (an atomic load or
// two), and at once when ctx is done or the pool stops.
func (e *Engine) Pace(ctx context.Context) {
	p := e.running.Load()
	if p == nil || !p.starved() {
		return
	}
	deadline := time.Now().Add(paceMax)
	var t *time.Timer
	for {
		if p.credit.Add(-1) >= 0 {
			return
		}
		p.credit.Add(1)
		p.paceMu.Lock()
		if p.claimed == nil {
			p.claimed = make(chan struct{})
		}
		ch := p.claimed
		p.paceMu.Unlock()
		wait := min(p.paceBound(), time.Until(deadline))
		if t == nil {
			t = time.NewTimer(wait)
			defer t.Stop()
		} else {
			t.Reset(wait) // a claim ended: wait for the next one
		}
		select {
		case <-ch:
			if !p.starved() {
				return
			}
		case <-t.C:
			return
		case <-ctx.Done():
			return
		case <-p.stopClaims:
			return
		}
	}
}

// paced records the claim that just ended: n jobs started, behind if it
// filled every free worker (more jobs may be due). While the pool is
// behind, each job started lets one more enqueue call through (credit); it
// releases the calls Pace holds. The time between two claims in a row
// that found the pool behind moves its claim interval (paceBound) a
// quarter of the way there, the first one all the way: a claim that
// follows another at once (the completer's beside the dispatcher's) does
// not cut the bound short. Under p.claimMu.
func (p *pool) paced(behind bool, n int) {
	now := time.Now().UnixNano()
	if last := p.lastClaim.Swap(now); behind && p.behind.Load() && last != 0 {
		gap := now - last
		if old := p.interval.Load(); old != 0 {
			gap = old + (gap-old)/4
		}
		p.interval.Store(gap)
	}
	if behind {
		if p.credit.Add(int64(n)) > claimBatch {
			p.credit.Store(claimBatch)
		}
	} else {
		p.credit.Store(0)
	}
	p.behind.Store(behind)
	p.paceMu.Lock()
	if p.claimed != nil {
		close(p.claimed)
		p.claimed = nil
	}
	p.paceMu.Unlock()
}

// paceBound is how long Pace waits for the pool's next claim: paceCycles
// of its claim interval while behind, within paceMin and paceMax.
func (p *pool) paceBound() time.Duration {
	return min(paceMax, max(paceMin, paceCycles*time.Duration(p.interval.Load())))
}

// starved reports whether a worker waits for a job while more may be due.
func (p *pool) starved() bool { return p.behind.Load() && p.h.idle.Load() > 0 }
