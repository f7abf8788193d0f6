// Package startstop gives Hopper's services one lifecycle. A Service runs a
// function on a context of its own: Start starts it, Stop cancels that
// context — so a loop blocked in a store call returns — and waits for the
// function to return. Both are idempotent and safe for concurrent use, and a
// stopped service may be started again.
package startstop

import (
	"context"
	"sync"
)

// Service is the lifecycle of one service. The zero value is stopped.
type Service struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs run in a new goroutine with a context that Stop cancels, and
// reports true; if the service is already running it does nothing and
// reports false.
func (s *Service) Start(run func(ctx context.Context)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.cancel, s.done = cancel, done
	go func() {
		defer close(done)
		run(ctx)
	}()
	return true
}

// Stop cancels the context of the running function and waits for it to
// return. Stopping a service that is not running returns at once.
func (s *Service) Stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if done == nil {
		return
	}
	cancel()
	<-done
	s.mu.Lock()
	if s.done == done {
		s.cancel, s.done = nil, nil
	}
	s.mu.Unlock()
}

// Running reports whether the service has been started and not stopped.
func (s *Service) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done != nil
}

// Done returns a channel closed when the running function returns by
// itself or through Stop, or nil if the service is not running.
func (s *Service) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}
