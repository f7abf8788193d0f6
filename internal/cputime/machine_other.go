//go:build !linux

package cputime

import "time"

// Machine returns the CPU time every CPU of the machine has spent busy so
// far, and true; false where the system does not say (here: only Linux
// does, through /proc/stat).
func Machine() (time.Duration, bool) { return 0, false }
