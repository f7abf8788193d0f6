package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// TestPeerDeathRescuedAtOnce: of two servers on one SQLite file, the one
// left alive rescues the jobs of the one killed (SIGKILL) within about a
// second, by noticing its lock file: not at its next rescue pass (an hour
// here), nor at a restart. The live one leads from the start, so no
// take-over of the lead rescues them either.
func TestPeerDeathRescuedAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two servers; skipped with -short")
	}
	t.Parallel()
	dir := t.TempDir()
	c := newHop(t, dir)
	marker := filepath.Join(dir, "ran-once")
	// The first attempt blocks (until its server dies); the second ends.
	script := fmt.Sprintf("if [ -e %s ]; then exit 0; fi; touch %s; exec sleep 600", marker, marker)
	id := strings.TrimSpace(c.run("", "enqueue", "--queue", "q", "exec", "--", "sh", "-c", script))
	if _, err := strconv.Atoi(id); err != nil {
		t.Fatalf("enqueue printed %q", id)
	}
	jobField := " job=" + id + " "

	// The survivor leads, and works another queue until the other server
	// has the job.
	live := c.serve(1, "--rescue-interval", "1h", "--queues", "other")
	live.log.waitLine(t, 30*time.Second, `msg="leading maintenance"`)
	doomed := c.serve(1, "--rescue-interval", "1h", "--queues", "q")
	doomed.log.waitLine(t, 30*time.Second, `msg="job started"`, jobField)
	if err := doomed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	doomed.cmd.Wait()
	killed := time.Now()
	// Only noticing the death rescues the job within the bound, which only
	// ends a failing test (the time is logged: about a second, the
	// store's PeerInterval).
	live.log.waitLine(t, 30*time.Second, `msg="job rescued"`, jobField)
	took := time.Since(killed)
	c.stop(live)
	if j := c.job(hopperID(t, id)); j.State != hopper.StateAvailable || len(j.Attempts) != 1 || j.Attempts[0].Outcome != "interrupted" {
		t.Errorf("the rescued job: %s, attempts %+v; want available after one interrupted attempt", j.State, j.Attempts)
	}
	t.Logf("the live server rescued the killed server's job %s after it died", took.Round(time.Millisecond))
}

func hopperID(t *testing.T, s string) hopper.ID {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return hopper.ID(n)
}
