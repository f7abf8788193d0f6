package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPeerDeathRescuedAtOnce: of two servers on one SQLite file, the one
// left alive rescues the jobs of the one killed (SIGKILL) within about a
// second, by noticing its lock file: not at its next rescue pass (an hour
// here), nor at a restart.
func TestPeerDeathRescuedAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two servers; skipped with -short")
	}
	t.Parallel()
	dir := t.TempDir()
	c := &hop{t: t, bin: hopperBin(t), db: filepath.Join(dir, "hopper.db"), logs: filepath.Join(dir, "logs")}
	os.Mkdir(c.logs, 0o755)
	marker := filepath.Join(dir, "ran-once")
	// The first attempt blocks (until its server dies); the second ends.
	script := fmt.Sprintf("if [ -e %s ]; then exit 0; fi; touch %s; exec sleep 600", marker, marker)
	id := strings.TrimSpace(c.run("", "enqueue", "exec", "--", "sh", "-c", script))
	if _, err := strconv.Atoi(id); err != nil {
		t.Fatalf("enqueue printed %q", id)
	}
	jobField := " job=" + id + " "

	a := c.serve(1, "--rescue-interval", "1h")
	a.log.waitLine(t, 30*time.Second, `msg="job started"`, jobField)
	b := c.serve(1, "--rescue-interval", "1h")
	b.log.waitLine(t, 30*time.Second, `msg="hopper serving"`)
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.cmd.Wait()
	killed := time.Now()
	// Its rescue interval is an hour: only noticing the death rescues it
	// within the bound, which only ends a failing test (the time is
	// logged: about a second, the PeerInterval).
	b.log.waitLine(t, 30*time.Second, `msg="job rescued"`, jobField)
	took := time.Since(killed)
	b.log.waitLine(t, 30*time.Second, `msg="job completed"`, jobField)
	c.stop(b)
	t.Logf("the live server rescued the killed server's job %s after it died", took.Round(time.Millisecond))
}
