package sqlitestore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/sqlitestore"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func open(t *testing.T, path string, opts sqlitestore.Options) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(t.Context(), path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newJob(t *testing.T, kind string) *job.Job {
	t.Helper()
	j := &job.Job{Kind: kind, Queue: job.DefaultQueue, MaxAttempts: 3, Args: []byte(`{"n":1}`)}
	if err := j.Validate(t0); err != nil {
		t.Fatal(err)
	}
	return j
}

func enqueue(t *testing.T, s store.Store, jobs ...*job.Job) []job.ID {
	t.Helper()
	res, err := s.Enqueue(context.Background(), store.EnqueueParams{Now: t0, Jobs: jobs})
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	ids := make([]job.ID, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids
}

func TestReopenKeepsJobsAndSchedules(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	for _, dur := range []sqlitestore.Durability{sqlitestore.DurabilityFull, sqlitestore.DurabilityNormal} {
		s, err := sqlitestore.Open(t.Context(), path, sqlitestore.Options{Durability: dur})
		if err != nil {
			t.Fatal(err)
		}
		ids := enqueue(t, s, newJob(t, "a"), newJob(t, "b"))
		if err := s.AddSchedule(t.Context(), store.AddScheduleParams{Schedule: &job.Schedule{Name: "n-" + dur.String(), Spec: "@daily", Kind: "k"}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if _, err := s.Get(t.Context(), ids[0]); !errors.Is(err, job.ErrClosed) {
			t.Errorf("Get after Close: got %v, want job.ErrClosed", err)
		}
		s = open(t, path, sqlitestore.Options{Durability: dur})
		for _, id := range ids {
			j, err := s.Get(t.Context(), id)
			if err != nil || j.State != job.StateAvailable || string(j.Args) != `{"n":1}` || !j.CreatedAt.Equal(t0) {
				t.Errorf("%s: Get(%d) after reopen: %+v, %v", dur, id, j, err)
			}
		}
		if _, err := s.GetSchedule(t.Context(), "n-"+dur.String()); err != nil {
			t.Errorf("%s: GetSchedule after reopen: %v", dur, err)
		}
		s.Close()
	}
}

// TestWake: a commit through one Store wakes another Store on the file.
func TestWake(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	a := open(t, path, sqlitestore.Options{})
	b := open(t, path, sqlitestore.Options{WatchInterval: 5 * time.Millisecond})
	if a.WorkerID() == b.WorkerID() {
		t.Fatalf("two Stores share worker ID %q", a.WorkerID())
	}
	enqueue(t, a, newJob(t, "k"))
	select {
	case <-b.Wake():
	case <-time.After(10 * time.Second): // failure guard only
		t.Fatal("no wake-up within 10s of another Store's commit")
	}
	res, err := b.Claim(t.Context(), store.ClaimParams{Now: t0, Limit: 10, Worker: b.WorkerID(), LeaseUntil: t0.Add(time.Minute)})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("Claim on the woken Store: %v, %v", res.Jobs, err)
	}
}

// TestGarbageFile: a file that is not a database gives a clear error and
// is left as it was.
func TestGarbageFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "garbage.db")
	garbage := bytes.Repeat([]byte("this is not a database\n"), 400)
	if err := os.WriteFile(path, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	s, err := sqlitestore.Open(t.Context(), path, sqlitestore.Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open of a garbage file succeeded")
	}
	if !errors.Is(err, sqlitestore.ErrNotDatabase) || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), "not a Hopper/SQLite database") {
		t.Errorf("Open of a garbage file: got %v, want ErrNotDatabase naming the path", err)
	}
	after, _ := os.Stat(path)
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, garbage) || !after.ModTime().Equal(before.ModTime()) {
		t.Error("Open of a garbage file changed it")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("Open of a garbage file left files behind: %v", names)
	}
}

func TestWorkerIDInUse(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	a := open(t, path, sqlitestore.Options{Worker: "w/1"})
	if a.WorkerID() != "w/1" {
		t.Errorf("WorkerID: got %q", a.WorkerID())
	}
	if _, err := os.Stat(filepath.Join(path+"-workers", "w%2F1.lock")); err != nil {
		t.Errorf("lock file: %v", err)
	}
	b, err := sqlitestore.Open(t.Context(), path, sqlitestore.Options{Worker: "w/1", BusyTimeout: 50 * time.Millisecond})
	if err == nil {
		b.Close()
		t.Fatal("second Open with the same worker ID succeeded")
	}
	if !strings.Contains(err.Error(), "in use") {
		t.Errorf("second Open with the same worker ID: %v", err)
	}
	a.Close()
	if _, err := os.Stat(filepath.Join(path+"-workers", "w%2F1.lock")); !os.IsNotExist(err) {
		t.Errorf("lock file after Close: %v, want it removed", err)
	}
	open(t, path, sqlitestore.Options{Worker: "w/1"}) // free again
}

func TestNotDurable(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "hopper.db"), sqlitestore.Options{})
	fn := &job.Job{Func: func(context.Context) (any, error) { return nil, nil }, Queue: job.DefaultQueue, MaxAttempts: 3}
	if err := fn.Validate(t0); err != nil {
		t.Fatal(err)
	}
	_, err := s.Enqueue(t.Context(), store.EnqueueParams{Now: t0, Jobs: []*job.Job{newJob(t, "a"), fn}})
	if !errors.Is(err, job.ErrNotDurable) {
		t.Fatalf("Enqueue of a closure: got %v, want job.ErrNotDurable", err)
	}
	if js, err := s.List(t.Context(), store.ListParams{}); err != nil || len(js) != 0 {
		t.Errorf("after a failed Enqueue: List got %d jobs, %v; want none", len(js), err)
	}
}

// TestNotValidated: Enqueue refuses a job job.Job.Validate did not prepare,
// naming it, and inserts nothing.
func TestNotValidated(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "hopper.db"), sqlitestore.Options{})
	raw := &job.Job{Kind: "raw", Queue: job.DefaultQueue, MaxAttempts: 1}
	_, err := s.Enqueue(t.Context(), store.EnqueueParams{Now: t0, Jobs: []*job.Job{newJob(t, "a"), raw}})
	var fe *job.FieldError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "job 2 of 2 (raw)") {
		t.Fatalf("Enqueue of a job not validated: got %v, want a *job.FieldError naming it", err)
	}
	if js, err := s.List(t.Context(), store.ListParams{}); err != nil || len(js) != 0 {
		t.Errorf("after a failed Enqueue: List got %d jobs, %v; want none", len(js), err)
	}
}

// TestCloseExpiresOwnLeases: jobs a closed Store still had running are up
// for rescue by the others at once.
func TestCloseExpiresOwnLeases(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	a := open(t, path, sqlitestore.Options{})
	b := open(t, path, sqlitestore.Options{})
	id := enqueue(t, a, newJob(t, "k"))[0]
	if _, err := a.Claim(t.Context(), store.ClaimParams{Now: t0, Limit: 1, Worker: a.WorkerID(), LeaseUntil: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	moved, err := b.Rescue(t.Context(), store.RescueParams{Now: t0.Add(time.Second)})
	if err != nil || len(moved) != 1 || moved[0].ID != id || moved[0].State != job.StateAvailable {
		t.Fatalf("Rescue after the claiming Store closed: %v, %v", moved, err)
	}
}

// TestMustExist: with MustExist, a file that does not exist is
// store.ErrNoSchema, read-only or not, and is not created; once it exists,
// both open.
func TestMustExist(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	for _, ro := range []bool{true, false} {
		s, err := sqlitestore.Open(t.Context(), path, sqlitestore.Options{ReadOnly: ro, MustExist: true})
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, store.ErrNoSchema) || !strings.Contains(err.Error(), path) {
			t.Errorf("Open (read-only %v) of a file that does not exist: got %v, want store.ErrNoSchema naming it", ro, err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 0 {
		t.Errorf("Open with MustExist created %v", entries)
	}
	open(t, path, sqlitestore.Options{}).Close()
	open(t, path, sqlitestore.Options{MustExist: true})
	open(t, path, sqlitestore.Options{MustExist: true, ReadOnly: true})
}
