//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// TestServeLeaseFlags: --lease and --rescue-interval reach the client — the
// serving line says so and a running job's lease is the one given — and
// bad values are usage errors.
func TestServeLeaseFlags(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "serve", "--lease", "2ms").fails(t, 2, "bad --lease 2ms", "at least 3ms")
	hop(t, db, "serve", "--lease", "0s").fails(t, 2, "bad --lease 0s", "must be positive")
	hop(t, db, "serve", "--rescue-interval", "0s").fails(t, 2, "bad --rescue-interval 0s")
	if _, err := os.Stat(db); err == nil {
		t.Fatal("a usage error created the database")
	}

	// The job blocks opening the fifo until the test opens its other end:
	// then it runs, under the server's lease.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	id := hop(t, db, "enqueue", "exec", "--", "sh", "-c", `cat "$1" >/dev/null`, "sh", fifo).ok(t).id(t)
	s := startServe(t, db, "--lease", "1500ms", "--rescue-interval", "250ms")
	opened := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until the job opens it
		if err != nil {
			t.Error(err)
		}
		opened <- f
	}()
	var w *os.File
	select {
	case w = <-opened:
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not start within 30s")
	}
	j := getJobJSON(t, db, id)
	w.Close() // the job ends
	if j.State != hopper.StateRunning || j.LeaseUntil.After(time.Now().Add(1500*time.Millisecond)) {
		t.Errorf("job %d: %s with lease until %s, want running with a lease of at most 1.5s from now (%s)", id, j.State, j.LeaseUntil, time.Now())
	}
	done := waitFinished(t, db, id)
	if done[0].State != hopper.StateCompleted || done[0].Attempt != 1 {
		t.Errorf("job %d: %s on attempt %d, want completed on attempt 1", id, done[0].State, done[0].Attempt)
	}
	log := s.stop()
	if !strings.Contains(log, "lease=1.5s rescue_interval=250ms") {
		t.Errorf("the serving line lacks the lease and the rescue interval:\n%s", log)
	}
}
