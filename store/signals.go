package store

import "sync"

// CancelWatcher is implemented by stores that tell the processes sharing
// them promptly that the cancel of a running job was requested (Cancel,
// CancelMatching), in this process or another, so that the process
// running the job learns of it before its next lease renewal: the memory
// store at once, SQLite within its watch interval (50ms), PostgreSQL
// through a notification (not behind PgBouncer: no LISTEN there, and the
// next renewal tells). WatchCancels returns a channel that receives
// (buffered, at most one pending signal) after each such request, and a
// function that ends the watch. A signal says only that some running
// job's cancel was requested: the watcher renews its leases at once, and
// Heartbeat reports which (HeartbeatResult.Cancel).
type CancelWatcher interface {
	WatchCancels() (<-chan struct{}, func())
}

// Signals fans a signal out to its watchers: each has a channel of one,
// and a signal while one is pending is merged into it. The zero value is
// ready; it is safe for concurrent use.
type Signals struct {
	mu    sync.Mutex
	chans map[chan struct{}]struct{}
}

// Watch returns a new watcher's channel and the function that removes it.
func (s *Signals) Watch() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	if s.chans == nil {
		s.chans = make(map[chan struct{}]struct{})
	}
	s.chans[ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.chans, ch)
		s.mu.Unlock()
	}
}

// Signal wakes every watcher without blocking.
func (s *Signals) Signal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.chans {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
