package hopper

import (
	"sync"
	"sync/atomic"

	"github.com/hopperq/hopper/job"
)

// reports delivers the transitions the engine and the maintenance services
// make, each after the client's own reports that must come before it, and
// never makes them wait for those: a store commits a transition before its
// caller reports it, and another goroutine may make the job's next
// transition in between (a worker claims a job the moment its enqueue is
// stored, before Enqueue reported it). So the client's calls that report
// events hold a ticket of a fence from before their store call until they
// have reported, and an engine report made while an older ticket of its
// fence is held is held back, with every engine report after it, until
// those tickets are released; a delivery goroutine, which runs only while
// reports are held, then delivers them in the order they were made. Two
// fences, so that each report waits only for the calls it may follow:
//
//   - Client.starts: Enqueue, Reschedule, RetryDead and RetryMatching (a
//     job made due may be claimed at once), before the report of a start
//     (EventStarted);
//   - Client.stops: Cancel and CancelMatching (a running job asked to stop
//     may stop at once, or fail, or its worker die), before the reports of
//     an attempt's end and of a rescue (EventCancelRequested before the
//     EventCancelled or EventCompleted that follows it).
//
// Before, the engine's report waited for the older tickets: with producers
// always in flight, every start a claim reported waited for a commit of
// enqueues, and claims fell to a tenth of the enqueue rate (issue 19).
// Holding reports back costs the engine an atomic load while no ticket is
// held and nothing is held back, and a lock otherwise; it never blocks.
type reports struct {
	deliver func(job.Event)
	// busy counts the tickets held, the reports held back and a running
	// delivery goroutine: while it is 0 a report is delivered at once.
	busy atomic.Int64
	kick chan struct{} // a ticket was released, or Stop began
	done sync.WaitGroup

	mu      sync.Mutex
	held    []heldReport // in the order they were made
	running bool         // the delivery goroutine runs
	closed  bool         // Stop: deliver what is held without waiting
}

// heldReport is an engine report waiting for the tickets of after below
// bound (after nil: waiting only for the reports held before it).
type heldReport struct {
	ev    job.Event
	after *fence
	bound uint64
}

// fence is one set of tickets of reports (see reports).
type fence struct {
	r        *reports
	next     uint64              // the next ticket
	inflight map[uint64]struct{} // tickets not yet released
}

func newReports(deliver func(job.Event)) *reports {
	return &reports{deliver: deliver, kick: make(chan struct{}, 1)}
}

func (r *reports) fence() fence { return fence{r: r, inflight: make(map[uint64]struct{})} }

// enter takes a ticket, held until leave.
func (f *fence) enter() uint64 {
	f.r.mu.Lock()
	defer f.r.mu.Unlock()
	t := f.next
	f.next++
	f.inflight[t] = struct{}{}
	f.r.busy.Add(1)
	return t
}

// leave releases ticket t, and has the delivery goroutine look at the
// reports held back.
func (f *fence) leave(t uint64) {
	f.r.mu.Lock()
	delete(f.inflight, t)
	f.r.busy.Add(-1)
	wake := len(f.r.held) > 0
	f.r.mu.Unlock()
	if wake {
		f.r.wake()
	}
}

// older reports whether a ticket taken before bound is held. Under r.mu.
func (f *fence) older(bound uint64) bool {
	for t := range f.inflight {
		if t < bound {
			return true
		}
	}
	return false
}

// report delivers ev once the tickets of after (if not nil) held now are
// released and the reports held before it are delivered: at once when
// there are none, else on the delivery goroutine. It never waits.
func (r *reports) report(ev job.Event, after *fence) {
	if r.busy.Load() == 0 {
		r.deliver(ev)
		return
	}
	r.mu.Lock()
	if r.closed || !r.running && len(r.held) == 0 && (after == nil || len(after.inflight) == 0) {
		r.mu.Unlock()
		r.deliver(ev)
		return
	}
	h := heldReport{ev: ev, after: after}
	if after != nil {
		h.bound = after.next
	}
	r.held = append(r.held, h)
	r.busy.Add(1)
	start := !r.running
	if start {
		r.running = true
		r.busy.Add(1)
		r.done.Add(1)
	}
	r.mu.Unlock()
	if start {
		go r.run()
	} else {
		r.wake()
	}
}

func (r *reports) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// run delivers the held reports in order, each once its tickets are
// released, and ends when none is left.
func (r *reports) run() {
	defer r.done.Done()
	r.mu.Lock()
	for {
		for len(r.held) > 0 {
			h := r.held[0]
			if !r.closed && h.after != nil && h.after.older(h.bound) {
				break
			}
			r.held[0] = heldReport{}
			r.held = r.held[1:]
			r.mu.Unlock()
			r.deliver(h.ev)
			r.busy.Add(-1)
			r.mu.Lock()
		}
		if len(r.held) == 0 {
			r.held = nil
			r.running = false
			r.busy.Add(-1)
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		<-r.kick
		r.mu.Lock()
	}
}

// close delivers the reports held back without waiting for tickets any
// more (client calls still in flight when the client stops), and returns
// once they are delivered; later reports are delivered at once.
func (r *reports) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.wake()
	r.done.Wait()
}
