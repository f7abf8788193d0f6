package engine

import (
	"context"
	"sync"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// slot holds the attempt one goroutine runs — a pool worker's, or a
// ProcessNext caller's — so that the heart-beat can renew its lease and
// Cancel, a lost lease or a forced Stop can cancel its handler. Each worker
// has a slot of its own: recording an attempt takes only that slot's lock,
// never one all workers share (a map under the engine's mutex cost 10–18%
// of the CPU end to end with 16 workers on the memory store).
type slot struct {
	mu     sync.Mutex
	lease  store.Lease
	cancel context.CancelCauseFunc // nil while no attempt runs
}

// start records the attempt l, cancelled by cancel.
func (s *slot) start(l store.Lease, cancel context.CancelCauseFunc) {
	s.mu.Lock()
	s.lease, s.cancel = l, cancel
	s.mu.Unlock()
}

// end records that the attempt is over.
func (s *slot) end() {
	s.mu.Lock()
	s.cancel = nil
	s.mu.Unlock()
}

// cancelIf cancels the running attempt with cause if match accepts its
// lease, and reports whether it did.
func (s *slot) cancelIf(match func(store.Lease) bool, cause error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel == nil || !match(s.lease) {
		return false
	}
	s.cancel(cause)
	return true
}

// running returns the lease of the running attempt, if any.
func (s *slot) running() (store.Lease, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lease, s.cancel != nil
}

// addSlot registers a slot for a ProcessNext call; removeSlot drops it.
func (e *Engine) addSlot(s *slot) {
	e.mu.Lock()
	e.callers[s] = struct{}{}
	e.mu.Unlock()
}

func (e *Engine) removeSlot(s *slot) {
	e.mu.Lock()
	delete(e.callers, s)
	e.mu.Unlock()
}

// slots returns every slot: the pool's workers' and the ProcessNext
// callers'.
func (e *Engine) slots() []*slot {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*slot
	if e.pool != nil {
		out = make([]*slot, 0, len(e.pool.slots)+len(e.callers))
		for i := range e.pool.slots {
			out = append(out, &e.pool.slots[i])
		}
	}
	for s := range e.callers {
		out = append(out, s)
	}
	return out
}

// cancelAll cancels every running handler with cause.
func (e *Engine) cancelAll(cause error) {
	for _, s := range e.slots() {
		s.cancelIf(func(store.Lease) bool { return true }, cause)
	}
}

// CancelRunning cancels the handler of job id if this engine runs it, and
// reports whether it did. The attempt then ends cancelled.
func (e *Engine) CancelRunning(id job.ID) bool { return e.cancelRunning(id, errCancelRequested) }

// TerminateRunning is CancelRunning with the cause job.ErrTerminated: the
// handler is asked to stop at once.
func (e *Engine) TerminateRunning(id job.ID) bool { return e.cancelRunning(id, job.ErrTerminated) }

func (e *Engine) cancelRunning(id job.ID, cause error) bool {
	found := false
	for _, s := range e.slots() {
		if s.cancelIf(func(l store.Lease) bool { return l.ID == id }, cause) {
			found = true
		}
	}
	return found
}

// leases lists the attempts running in this engine.
func (e *Engine) leases() []store.Lease {
	var out []store.Lease
	for _, s := range e.slots() {
		if l, ok := s.running(); ok {
			out = append(out, l)
		}
	}
	return out
}

// loseLease cancels the handler of an attempt whose lease is lost, and
// reports whether that attempt was still running.
func (e *Engine) loseLease(l store.Lease) bool {
	lost := false
	for _, s := range e.slots() {
		if s.cancelIf(func(r store.Lease) bool { return r == l }, errLeaseLost) {
			lost = true
		}
	}
	return lost
}
