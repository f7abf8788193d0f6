package cputime

import (
	"testing"
	"time"
)

// TestProcessCounts checks that Process grows while the process computes:
// by a millisecond within a minute of computing, however coarse the
// system's clock of CPU time.
func TestProcessCounts(t *testing.T) {
	t.Parallel()
	start := Process()
	deadline := time.Now().Add(time.Minute)
	x := 0
	for Process()-start < time.Millisecond && time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x += i
		}
	}
	if used := Process() - start; used < time.Millisecond {
		t.Fatalf("Process grew by %v in a minute of computing (%d)", used, x)
	}
}
