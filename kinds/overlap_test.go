//go:build linux

package kinds

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// TestScheduleOverlapCancelKillsExecGroup: a run of an exec schedule with
// overlap cancel stops the process group of the schedule's running job
// (a child the command started included) with SIGTERM, overlap terminate
// with SIGKILL, and the job ends cancelled. The latency from the run to
// the job's end is logged (real clock).
func TestScheduleOverlapCancelKillsExecGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		overlap hopper.Overlap
		signal  string
	}{{hopper.OverlapCancel, "SIGTERM"}, {hopper.OverlapTerminate, "SIGKILL"}} {
		t.Run(tc.overlap.String(), func(t *testing.T) {
			t.Parallel()
			testOverlapStopsExecGroup(t, tc.overlap, tc.signal)
		})
	}
}

func testOverlapStopsExecGroup(t *testing.T, overlap hopper.Overlap, signal string) {
	ws := hopper.NewWorkers()
	Register(ws)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.StopNow() })
	ctx := context.Background()
	fifo := filepath.Join(t.TempDir(), "pid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The command starts a child in its group, tells its PID and waits.
	args := ExecArgs{Command: "sh", Args: []string{"-c", `sleep 300 & echo $! > "$0"; wait`, fifo}}
	if _, err := c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Hour, Kind: KindExec, Args: args, Overlap: overlap}); err != nil {
		t.Fatal(err)
	}
	first, err := c.RunSchedule(ctx, "s", hopper.RunScheduleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fifo) // blocks until the command wrote the PID
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("child PID %q: %v", b, err)
	}
	start := time.Now()
	if _, err := c.RunSchedule(ctx, "s", hopper.RunScheduleOptions{}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	j, err := c.Wait(wctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("from the run now to the previous exec job's end: %s", time.Since(start))
	if j.State != hopper.StateCancelled {
		t.Errorf("previous job: %s, want cancelled", j.State)
	}
	if alive(pid) {
		t.Errorf("the command's child %d outlived its cancelled job", pid)
	}
	var res ExecResult
	if n := len(j.Attempts); n == 0 || json.Unmarshal(j.Attempts[n-1].Result, &res) != nil || res.Signal != signal {
		t.Errorf("the attempt's result: %+v (%v), want the command ended by %s", res, j.Attempts, signal)
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
