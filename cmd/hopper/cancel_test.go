//go:build unix

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	_ "github.com/hopperq/hopper/store/sqlitestore" // sqlite:
)

// TestCancelAcrossCrash cancels a running exec job from another process
// (hopper jobs cancel) while its server is frozen (SIGSTOP: a live server
// learns of a cancel within milliseconds, store.CancelWatcher), SIGKILLs
// the server, and restarts it: the job ends cancelled and never runs
// again.
func TestCancelAcrossCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it; skipped with -short")
	}
	t.Parallel()
	dir := t.TempDir()
	c := newHop(t, dir)

	// The job records its process ID, so that the test can end the sleep
	// its killed server leaves behind, and the times it started.
	pidFile, runs := filepath.Join(dir, "sleep.pid"), filepath.Join(dir, "runs")
	script := fmt.Sprintf("echo run >> %s; echo $$ > %s; exec sleep 300", runs, pidFile)
	id, err := strconv.ParseInt(strings.TrimSpace(c.run("", "enqueue", "exec", "--", "sh", "-c", script)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				syscall.Kill(-pid, syscall.SIGKILL) // its process group
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	jobField := fmt.Sprintf(" job=%d ", id)

	srv := c.serve(1)
	srv.log.waitLine(t, 30*time.Second, `msg="hopper serving"`)
	srv.log.waitLine(t, 30*time.Second, `msg="job started"`, jobField)
	// Frozen in the middle of a write (a heart-beat, a poll), the server
	// holds the database's write lock and the cancel cannot be written:
	// let it run a moment and freeze it again.
	for try := 1; ; try++ {
		if err := srv.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		out, errOut, err := c.try("", "jobs", "cancel", strconv.FormatInt(id, 10))
		if err == nil {
			if !strings.Contains(out, "cancellation requested") {
				t.Fatalf("jobs cancel printed %q", out)
			}
			break
		}
		if !strings.Contains(errOut, "database is locked") || try == 10 {
			t.Fatalf("jobs cancel (try %d): %v\nstderr: %s", try, err, errOut)
		}
		if err := srv.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		c.run("", "jobs", "get", strconv.FormatInt(id, 10)) // opening the database waits for the lock to be free
	}
	if j := c.job(hopper.ID(id)); j.State != hopper.StateRunning || !j.CancelRequested {
		t.Fatalf("after jobs cancel: %s, cancel requested %v", j.State, j.CancelRequested)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.cmd.Wait()
	// The server, frozen before the cancel, could not act on it. Had it,
	// the job would have ended in this server and the crash would test
	// nothing.
	for _, l := range srv.log.all() {
		if strings.Contains(l, jobField) && !strings.Contains(l, `msg="job started"`) {
			t.Fatalf("the killed server acted on the job before the kill, so the test did not test a crash: %s", l)
		}
	}

	// The next server rescues the job: it ends cancelled, without running.
	srv = c.serve(1)
	srv.log.waitLine(t, 30*time.Second, `msg="hopper serving"`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := hopper.Open(ctx, "sqlite:"+c.db, hopper.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	j, err := cl.Wait(ctx, hopper.ID(id))
	cl.Stop(context.Background())
	if err != nil {
		t.Fatalf("waiting for job %d: %v", id, err)
	}
	c.stop(srv)
	if j.State != hopper.StateCancelled || j.Attempt != 1 || len(j.Attempts) != 1 {
		t.Fatalf("job %d: %s after %d attempts %+v, want cancelled after 1", id, j.State, j.Attempt, j.Attempts)
	}
	if line, _ := srv.log.find(`msg="job started"`, jobField); line != "" {
		t.Errorf("the restarted server ran the job again: %s", line)
	}
	if b, _ := os.ReadFile(runs); strings.Count(string(b), "run") > 1 {
		t.Errorf("the job's command ran %d times", strings.Count(string(b), "run"))
	}
	if got := c.job(hopper.ID(id)); got.State != hopper.StateCancelled {
		t.Errorf("jobs get: %s", got.State)
	}
}
