package engine

import (
	"sync"
	"sync/atomic"

	"github.com/hopperq/hopper/job"
)

// handoff carries claimed jobs to the workers and their outcomes to the
// completer, under one mutex for both directions:
//
//   - a fill hands over its whole batch of jobs in one critical section
//     and wakes only as many waiting workers as there are jobs;
//   - a worker gives back its outcome and takes its next job in one
//     critical section, and does not park while a job is waiting;
//   - the completer is woken when outcomes appear where there were none,
//     and takes all of them (up to a limit) at once.
//
// The two buffered channels this replaced cost a goroutine switch per job
// in each direction: each send to a parked worker hands it that job and
// readies it, though only two can run on two cores. BenchmarkHandoff (no
// store, no-op jobs) moves a job in 110–122 ns against 931–934 ns through
// channels with 16 workers, 221–234 against 591–652 with 4; with a single
// worker, which parks after every job either way, it is 10% slower
// (651–687 against 587–612 ns). docs/measurements/performance-log.md,
// "hand-offs in batches", has the end-to-end figures.
//
// Jobs are taken in the order they were pushed, the claim's order. No job
// waits behind a running one. A worker's slot is free only once the
// completer has taken its outcome, and a worker gives back its outcome in
// the same critical section in which it takes a job or starts to wait; so
// fill, which claims no more jobs than there are free slots, never leaves
// more jobs queued than there are workers waiting. Each push signals as
// many of those as it pushed jobs (all of them if fewer), and Signal wakes
// waiters that were not signalled yet: there are always at least as many
// workers signalled, and not yet awake, as jobs queued, or the queue is
// taken by workers coming back from a job.
type handoff struct {
	mu      sync.Mutex
	hasJob  sync.Cond  // signalled once per job pushed while workers wait
	jobs    []*job.Job // jobs[head:] are claimed and not yet taken
	head    int
	waiting int          // workers waiting in next
	idle    atomic.Int32 // waiting, read without the lock (Pace)
	closed  bool         // no more jobs will be pushed

	outs  []finished    // outcomes the completer has not taken
	ended bool          // every worker has returned: no more outcomes
	ready chan struct{} // holds a token when outs became non-empty or ended
}

func newHandoff(workers int) *handoff {
	h := &handoff{
		jobs:  make([]*job.Job, 0, workers),
		outs:  make([]finished, 0, workers),
		ready: make(chan struct{}, 1),
	}
	h.hasJob.L = &h.mu
	return h
}

// push hands js to the workers, in order.
func (h *handoff) push(js []*job.Job) {
	if len(js) == 0 {
		return
	}
	h.mu.Lock()
	h.jobs = append(h.jobs, js...)
	for range min(len(js), h.waiting) {
		h.hasJob.Signal()
	}
	h.mu.Unlock()
}

// close tells the workers no more jobs will come; they return once the
// jobs pushed before are taken.
func (h *handoff) close() {
	h.mu.Lock()
	h.closed = true
	h.hasJob.Broadcast()
	h.mu.Unlock()
}

// pending reports how many pushed jobs no worker has taken yet.
func (h *handoff) pending() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.jobs) - h.head
}

// next gives back f, the outcome of the worker's last job (if done), and
// waits for the worker's next job; it returns false once the handoff is
// closed and no job is left.
func (h *handoff) next(f finished, done bool) (*job.Job, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if done {
		h.outs = append(h.outs, f)
		if len(h.outs) == 1 {
			h.signal()
		}
	}
	for h.head == len(h.jobs) {
		if h.closed {
			return nil, false
		}
		h.waiting++
		h.idle.Add(1)
		h.hasJob.Wait()
		h.idle.Add(-1)
		h.waiting--
	}
	j := h.jobs[h.head]
	h.jobs[h.head] = nil
	h.head++
	if h.head == len(h.jobs) {
		h.jobs, h.head = h.jobs[:0], 0
	}
	return j, true
}

// end tells the completer that every worker has returned: once it has
// taken the outcomes left, outcomes reports false.
func (h *handoff) end() {
	h.mu.Lock()
	h.ended = true
	h.signal()
	h.mu.Unlock()
}

// signal leaves a token for the completer unless one is there.
func (h *handoff) signal() {
	select {
	case h.ready <- struct{}{}:
	default:
	}
}

// outcomes waits for outcomes and appends up to limit of them, oldest
// first, to dst[:0]; it returns false once the workers have ended and every
// outcome was taken. dst may be exchanged for the handoff's buffer: the
// caller clears what it got before passing it back.
func (h *handoff) outcomes(dst []finished, limit int) ([]finished, bool) {
	for {
		h.mu.Lock()
		if n := len(h.outs); n > 0 {
			if n <= limit {
				dst, h.outs = h.outs, dst[:0]
			} else {
				dst = append(dst[:0], h.outs[:limit]...)
				k := copy(h.outs, h.outs[limit:])
				clear(h.outs[k:])
				h.outs = h.outs[:k]
			}
			h.mu.Unlock()
			return dst, true
		}
		ended := h.ended
		h.mu.Unlock()
		if ended {
			return dst[:0], false
		}
		<-h.ready
	}
}
