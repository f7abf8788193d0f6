package startstop

import (
	"context"
	"testing"
	"testing/synctest"
)

func TestStartStopRestart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var s Service
		s.Stop() // not running: returns at once
		runs := make(chan struct{}, 2)
		run := func(ctx context.Context) {
			runs <- struct{}{}
			<-ctx.Done() // a loop blocked until Stop
		}
		for round := range 2 {
			if !s.Start(run) {
				t.Fatalf("round %d: Start: got false, want true", round)
			}
			if s.Start(run) {
				t.Errorf("round %d: second Start: got true, want false", round)
			}
			<-runs
			if !s.Running() {
				t.Errorf("round %d: not running after Start", round)
			}
			s.Stop()
			s.Stop()
			if s.Running() {
				t.Errorf("round %d: running after Stop", round)
			}
		}
	})
}
