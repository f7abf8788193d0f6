package cputime

import (
	"syscall"
	"time"
)

// Process returns the CPU time (user and kernel, every thread) the process
// has used so far.
func Process() time.Duration {
	var creation, exit, kernel, user syscall.Filetime
	h, err := syscall.GetCurrentProcess()
	if err == nil {
		err = syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user)
	}
	if err != nil {
		panic("cputime: GetProcessTimes: " + err.Error())
	}
	return ticks(kernel) + ticks(user)
}

// ticks is a Filetime holding a duration, in 100 ns ticks.
func ticks(ft syscall.Filetime) time.Duration {
	return time.Duration(int64(ft.HighDateTime)<<32|int64(ft.LowDateTime)) * 100
}
