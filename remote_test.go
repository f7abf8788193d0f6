package hopper_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// TestRemoteFetchWokenByAnotherProcess: a remote worker's long poll on one
// client is woken by a job another client (another process, for the
// store) enqueues in the same SQLite file — through the store's Waker,
// which the client fans out — long before its wait ends.
func TestRemoteFetchWokenByAnotherProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := "sqlite:" + filepath.Join(t.TempDir(), "hopper.db")
	server, err := hopper.Open(ctx, path, hopper.Config{Logger: quiet, ExternalKinds: []string{"mail"}})
	if err != nil {
		t.Fatal(err)
	}
	defer server.StopNow()
	producer, err := hopper.Open(ctx, path, hopper.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer producer.StopNow()
	w, err := server.RegisterWorker(ctx, hopper.WorkerSpec{Kinds: []string{"mail"}, Slots: 2}, "")
	if err != nil {
		t.Fatal(err)
	}
	// The wait is the longest; the test's bound, shorter, fails it if
	// only the end of the wait answers.
	bound, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	got := make(chan hopper.FetchResult, 1)
	errs := make(chan error, 1)
	go func() {
		f, err := server.FetchJobs(bound, hopper.FetchParams{Worker: w.ID, Max: 2, Wait: hopper.MaxFetchWait})
		if err != nil {
			errs <- err
			return
		}
		got <- f
	}()
	r, err := producer.Enqueue(ctx, "mail", map[string]string{"to": "ada"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-got:
		if len(f.Leases) != 1 || f.Leases[0].Job.ID != r.ID || f.Leases[0].Job.Worker != w.ID {
			t.Fatalf("fetched %+v", f)
		}
		// The token completes it once; the second time it is stale.
		c := []hopper.Completion{{Token: f.Leases[0].Token, Result: []byte(`"sent"`)}}
		if _, err := server.CompleteJobs(ctx, w.ID, "", c); err != nil {
			t.Fatal(err)
		}
		if _, err := server.CompleteJobs(ctx, w.ID, "", c); !errors.Is(err, hopper.ErrLeaseLost) {
			t.Fatalf("second completion: %v, want ErrLeaseLost", err)
		}
	case err := <-errs:
		t.Fatalf("the long poll was not woken by the other process's enqueue: %v", err)
	}
}
