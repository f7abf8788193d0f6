//go:build linux

// Package proctest helps tests wait for processes they did not start to
// exit — the children of a killed server, say — without sleeping: a pidfd
// becomes readable when its process terminates.
package proctest

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// WaitGone fails t unless every process of pids exits within d in all (d
// bounds a failing test; it is not a wait). A survivor whose command is one
// of kill (such as "sleep") is killed afterwards, so that a failing test
// leaves nothing behind.
func WaitGone(t testing.TB, pids []int, d time.Duration, kill ...string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue // gone and reaped
		}
		if err != nil {
			t.Fatalf("pidfd_open(%d): %v", pid, err)
		}
		if !Exits(t, fd, time.Until(deadline)) {
			t.Errorf("process %d is still alive", pid)
			comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
			for _, k := range kill {
				if strings.TrimSpace(string(comm)) == k {
					unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) // ours, not a process that reused the pid
				}
			}
		}
		unix.Close(fd)
	}
}

// Exits reports whether the process of pidfd fd exits within d (or has).
func Exits(t testing.TB, fd int, d time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(max(0, time.Until(deadline).Milliseconds())))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Errorf("poll: %v", err)
			return false
		}
		return n == 1
	}
}

// ReadPids parses a file of whitespace-separated PIDs, failing t unless it
// holds want of them.
func ReadPids(t testing.TB, file string, want int) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %s: %q is not a pid", file, f)
		}
		pids = append(pids, pid)
	}
	if len(pids) != want {
		t.Fatalf("pid file %s holds %v, want %d pids", file, pids, want)
	}
	return pids
}
