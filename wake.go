package hopper

import (
	"context"
	"sync"

	"github.com/hopperq/hopper/internal/startstop"
)

// wakeHub tells everyone who waits for work that jobs may have become
// available: the engine's dispatcher (engine.Notify) and the long polls of
// remote workers (FetchJobs). Its sources are the client's own calls that
// make jobs due (enqueue, reschedule, DLQ retry, schedule ticks, rescues)
// and, for a store shared by several processes, the store's Waker, which
// one goroutine reads and fans out (forward): the engine no longer reads
// it itself, so that no reader steals a signal from the others.
type wakeHub struct {
	mu sync.Mutex
	ch chan struct{} // closed at the next signal, then replaced

	store   <-chan struct{}   // the store's Waker channel, nil without one
	fwd     startstop.Service // reads store, from the first need until Stop
	started bool              // under mu: fwd was started
	stopped bool              // under mu: the client stopped; fwd starts no more
}

// wait returns a channel closed at the next signal. Take it before looking
// for work, so that a signal between the look and the wait is not missed.
func (h *wakeHub) wait() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ch == nil {
		h.ch = make(chan struct{})
	}
	return h.ch
}

// signal wakes every waiter.
func (h *wakeHub) signal() {
	h.mu.Lock()
	if h.ch != nil {
		close(h.ch)
		h.ch = nil
	}
	h.mu.Unlock()
}

// forward starts, once, the goroutine that fans the store's Waker out to
// the engine (notify) and the waiters; Client.Stop stops it.
func (h *wakeHub) forward(notify func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.store == nil || h.started || h.stopped {
		return
	}
	h.started = true
	h.fwd.Start(func(ctx context.Context) {
		for {
			select {
			case <-ctx.Done():
				return
			case <-h.store:
				notify()
				h.signal()
			}
		}
	})
}

// stop stops the forwarding for good (Client.Stop).
func (h *wakeHub) stop() {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	h.fwd.Stop()
}

// notify tells the engine and the remote workers' long polls that jobs may
// have become available.
func (c *Client) notify() {
	c.engine.Notify()
	c.wake.signal()
}
