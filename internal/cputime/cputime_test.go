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

// TestMachineCounts checks that Machine, where the system says, grows
// while this process computes, by at least half the process's own CPU
// time: the kernel counts the machine's time in ticks, and time a virtual
// machine's host took back (steal) in neither Machine nor idle, while the
// process's clock may include it.
func TestMachineCounts(t *testing.T) {
	t.Parallel()
	m0, ok := Machine()
	if !ok {
		t.Skip("this system does not report the machine's CPU time")
	}
	p0 := Process()
	deadline := time.Now().Add(time.Minute)
	x := 0
	for Process()-p0 < 100*time.Millisecond && time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x += i
		}
	}
	m1, _ := Machine()
	if used := Process() - p0; m1-m0 < used/2 {
		t.Fatalf("Machine grew by %v while the process used %v (%d)", m1-m0, used, x)
	}
}
