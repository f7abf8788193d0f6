//go:build !unix

package storetest

import "time"

// cpuTime is zero where the process's CPU time is not read: BenchBulk
// reports cpu-s/action 0.
func cpuTime() time.Duration { return 0 }
