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
// started a job for each call let through since it fell behind, at most
// paceMax: the workers get their share of the store and the CPU, and a job
// waits less in a shorter queue. The client paces only calls that store
// one job: what crowds the workers out is many small calls (each a lock
// taken, a request to the writer); batches are few calls, and an ingest
// in batches of 1,000 would otherwise wait for a claim per batch (on
// SQLite it cut the pre-filled benchmark's insert rate by a fifth).
//
// The cost falls on enqueues made while jobs wait for free workers: one
// claim's time (microseconds in memory, about one commit on a durable
// store), never more than paceMax. Nothing while the pool keeps up or
// every worker is busy (slow handlers: the backlog is theirs, not the
// producers'), and nothing for a client whose pool is not running.

// paceMax bounds how long Pace holds an enqueue.
const paceMax = 10 * time.Millisecond

// Pace returns, when the pool is behind, once the pool has started a job
// for each call Pace let through since it fell behind, this one included,
// or paceMax has passed; at once otherwise (an atomic load or two), and at
// once when ctx is done or the pool stops.
func (e *Engine) Pace(ctx context.Context) {
	p := e.running.Load()
	if p == nil || !p.starved() {
		return
	}
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
		if t == nil {
			t = time.NewTimer(paceMax)
			defer t.Stop()
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
// releases the calls Pace holds.
func (p *pool) paced(behind bool, n int) {
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

// starved reports whether a worker waits for a job while more may be due.
func (p *pool) starved() bool { return p.behind.Load() && p.h.idle.Load() > 0 }
