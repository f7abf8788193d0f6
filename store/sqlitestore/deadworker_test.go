package sqlitestore_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/sqlitestore"
)

const helperEnv = "HOPPER_SQLITESTORE_HELPER_DB"

// TestHelperProcess is not a test: TestDeadWorker runs the test binary
// again as a worker process that opens the store, claims one job with a
// lease of an hour, takes the "maintenance" leader lease for an hour,
// prints "claimed <id> <worker>" and blocks until killed (or until its
// stdin closes).
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process of TestDeadWorker")
	}
	s, err := sqlitestore.Open(t.Context(), path, sqlitestore.Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	now := time.Now()
	res, err := s.Claim(t.Context(), store.ClaimParams{Now: now, Limit: 1, Worker: s.WorkerID(), LeaseUntil: now.Add(time.Hour)})
	if err != nil || len(res.Jobs) != 1 {
		fmt.Println("error", res.Jobs, err)
		os.Exit(1)
	}
	lead, err := s.Lead(t.Context(), store.LeadParams{Now: now, Name: "maintenance", Holder: s.WorkerID(), TTL: time.Hour})
	if err != nil || !lead.Leader {
		fmt.Println("error", lead, err)
		os.Exit(1)
	}
	fmt.Println("claimed", res.Jobs[0].ID, s.WorkerID())
	io.Copy(io.Discard, os.Stdin) // block
	os.Exit(0)
}

// TestDeadWorker: a job claimed by a live process is left alone by Rescue;
// once that process is killed (SIGKILL: no cleanup at all), reopening the
// file expires the job's lease and Rescue makes it available again at
// once, with an interrupted attempt recorded.
func TestDeadWorker(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	s := open(t, path, sqlitestore.Options{})
	id := enqueue(t, s, newJob(t, "k"))[0]

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var gotID job.ID
	var childWorker string
	if _, scanErr := fmt.Sscanf(line, "claimed %d %s", &gotID, &childWorker); err != nil || scanErr != nil || gotID != id {
		t.Fatalf("helper process: got %q, %v; want \"claimed %d <worker>\"", line, err, id)
	}
	lockFile := filepath.Join(path+"-workers", strings.ReplaceAll(childWorker, "/", "%2F")+".lock")

	// Alive: its job is not touched before its lease expires.
	moved, err := s.Rescue(t.Context(), store.RescueParams{Now: time.Now()})
	if err != nil || len(moved) != 0 {
		t.Fatalf("Rescue while the worker lives: moved %v, %v; want nothing", moved, err)
	}
	if j, _ := s.Get(t.Context(), id); j.State != job.StateRunning || j.LeaseUntil.IsZero() {
		t.Fatalf("job while its worker lives: state %s lease %v, want running with its lease", j.State, j.LeaseUntil)
	}
	if _, err := os.Stat(lockFile); err != nil {
		t.Fatalf("live worker's lock file: %v", err)
	}
	if res, err := s.Lead(t.Context(), store.LeadParams{Now: time.Now(), Name: "maintenance", Holder: s.WorkerID(), TTL: time.Minute}); err != nil || res.Leader {
		t.Fatalf("Lead while the leader lives: %+v, %v; want the helper's lease to hold", res, err)
	}

	// kill -9.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true

	// Reopening expires the dead worker's lease and removes its lock file.
	s2 := open(t, path, sqlitestore.Options{})
	j, err := s2.Get(t.Context(), id)
	if err != nil || j.State != job.StateRunning || !j.LeaseUntil.IsZero() {
		t.Fatalf("job after reopen: %+v, %v; want running with its lease expired (zero)", j, err)
	}
	if _, err := os.Stat(lockFile); !os.IsNotExist(err) {
		t.Errorf("dead worker's lock file after reopen: %v, want removed", err)
	}
	// Its leader lease is over too, though its hour has not passed.
	now := time.Now()
	if res, err := s2.Lead(t.Context(), store.LeadParams{Now: now, Name: "maintenance", Holder: s2.WorkerID(), TTL: time.Minute}); err != nil || !res.Leader || res.Term != 2 {
		t.Fatalf("Lead after the leader died: %+v, %v; want a take-over in term 2", res, err)
	}
	moved, err = s2.Rescue(t.Context(), store.RescueParams{Now: now})
	if err != nil || len(moved) != 1 || moved[0].ID != id {
		t.Fatalf("Rescue after the worker died: %v, %v; want job %d", moved, err, id)
	}
	j, err = s2.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != job.StateAvailable || j.Crashes != 1 || j.Attempt != 1 || j.Worker != "" || !j.RunAt.Equal(now.UTC()) {
		t.Errorf("rescued job: state %s crashes %d attempt %d worker %q run-at %v", j.State, j.Crashes, j.Attempt, j.Worker, j.RunAt)
	}
	if len(j.Attempts) != 1 || j.Attempts[0].Outcome != job.OutcomeInterrupted || j.Attempts[0].Worker != childWorker {
		t.Errorf("rescued job's attempts: %+v, want one interrupted attempt by %s", j.Attempts, childWorker)
	}
	res, err := s.Claim(t.Context(), store.ClaimParams{Now: now, Limit: 1, Worker: s.WorkerID(), LeaseUntil: now.Add(time.Minute)})
	if err != nil || len(res.Jobs) != 1 || res.Jobs[0].ID != id || res.Jobs[0].Attempt != 2 {
		t.Errorf("claim of the rescued job: %v, %v", res.Jobs, err)
	}
}

// TestDeadWorkerRescueWithoutReopen: Rescue alone notices a dead worker.
func TestDeadWorkerRescueWithoutReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	s := open(t, path, sqlitestore.Options{})
	id := enqueue(t, s, newJob(t, "k"))[0]
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !strings.HasPrefix(line, fmt.Sprintf("claimed %d ", id)) {
		t.Fatalf("helper process: got %q", line)
	}
	moved, err := s.Rescue(t.Context(), store.RescueParams{Now: time.Now()})
	if err != nil || len(moved) != 1 || moved[0].ID != id || moved[0].State != job.StateAvailable {
		t.Fatalf("Rescue after the worker died: %v, %v", moved, err)
	}
	if res, err := s.Lead(t.Context(), store.LeadParams{Now: time.Now(), Name: "maintenance", Holder: s.WorkerID(), TTL: time.Minute}); err != nil || !res.Leader {
		t.Fatalf("Lead after the leader died and Rescue noticed: %+v, %v; want a take-over", res, err)
	}
}

// TestDeadWorkerDeaths: a live Store notices by itself, within its
// PeerInterval, that another Store on the file died: Deaths receives, and
// the next Rescue returns the dead Store's job though its lease has an hour
// to run.
func TestDeadWorkerDeaths(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	s := open(t, path, sqlitestore.Options{WatchInterval: 5 * time.Millisecond, PeerInterval: 10 * time.Millisecond})
	id := enqueue(t, s, newJob(t, "k"))[0]
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !strings.HasPrefix(line, fmt.Sprintf("claimed %d ", id)) {
		t.Fatalf("helper process: got %q", line)
	}
	select {
	case <-s.Deaths():
	case <-time.After(30 * time.Second): // only bounds a failing test
		t.Fatal("Deaths did not receive after the other Store's process was killed")
	}
	moved, err := s.Rescue(t.Context(), store.RescueParams{Now: time.Now()})
	if err != nil || len(moved) != 1 || moved[0].ID != id || moved[0].State != job.StateAvailable {
		t.Fatalf("Rescue after Deaths: %v, %v; want job %d available", moved, err, id)
	}
}
