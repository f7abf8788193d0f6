//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/proctest"
)

// TestExecDiesWithServer SIGKILLs hopper serve while an exec job's command
// and its children run: every process of the job must die with the server
// (its supervisor kills the group), and the restarted server runs the
// rescued job again alone — the second run finds none of the first one's
// processes beside it. Linux only, as the supervisor is.
func TestExecDiesWithServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it; skipped with -short")
	}
	t.Parallel()
	dir := t.TempDir()
	c := newHop(t, dir)
	pids, fifo := filepath.Join(dir, "pids"), filepath.Join(dir, "ready")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The first run starts two children, writes their pids and its own, says
	// so through the fifo and waits; a later run checks that none of the
	// first run's processes is alive beside it, and ends. A zombie is dead:
	// the killed processes are orphans, and how soon they are reaped is up
	// to the system's init (here a restarted server runs the job again
	// within a millisecond, before this machine's init had reaped them).
	script := `if [ -s "$1" ]; then for p in $(cat "$1"); do st=$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null) && [ "$st" != Z ] && { echo "$p alive ($st)" >&2; exit 9; }; done; exit 0; fi
sleep 1000 & echo $! > "$1.tmp"; sleep 1000 & echo $! >> "$1.tmp"; echo $$ >> "$1.tmp"; mv "$1.tmp" "$1"
echo ready > "$2"; wait`
	id, err := strconv.ParseInt(strings.TrimSpace(c.run("", "enqueue", "--max-attempts", "3", "exec", "--", "sh", "-c", script, "sh", pids, fifo)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}

	s := c.serve(1)
	ready, err := os.ReadFile(fifo) // blocks until the first run is up (fails the test only by its timeout)
	if err != nil || string(ready) != "ready\n" {
		t.Fatalf("reading the fifo: %q, %v", ready, err)
	}
	procs := proctest.ReadPids(t, pids, 3)
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
	proctest.WaitGone(t, procs, 10*time.Second, "sleep", "sh")

	s = c.serve(1)
	defer c.stop(s)
	s.log.waitLine(t, time.Minute, `msg="job completed"`, "job="+strconv.FormatInt(id, 10)+" ")
	j := c.job(hopper.ID(id))
	if j.Attempt != 2 || j.State != hopper.StateCompleted {
		t.Errorf("job %d after the restart: %s, attempt %d, want completed on attempt 2", id, j.State, j.Attempt)
	}
	if len(j.Attempts) != 2 || j.Attempts[0].Outcome != "interrupted" {
		t.Errorf("attempts %+v, want an interrupted one then a completed one", j.Attempts)
	}
}
