package metrics

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/hopperq/hopper"
)

// TestRemoteWorkerMetrics: a remote worker's jobs are counted by the name
// it registered with and their outcome — fetched, completed, failed,
// snoozed, refused — and the names beyond Options.MaxRemoteWorkers, and
// workers this client does not know, under Other.
func TestRemoteWorkerMetrics(t *testing.T) {
	t.Parallel()
	m := New(Options{NoPool: true, MaxRemoteWorkers: 2})
	c, err := hopper.NewClient(hopper.Config{
		Logger: slog.New(slog.DiscardHandler), OnEvent: m.OnEvent, OnStoreCall: m.OnStoreCall,
		Remote: hopper.RemoteOptions{OnRefused: m.OnRemoteRefused},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	m.Attach(c)
	ctx := context.Background()
	register := func(name string) string {
		w, err := c.RegisterWorker(ctx, hopper.WorkerSpec{Kinds: []string{"mail"}, Slots: 4, Name: name}, "")
		if err != nil {
			t.Fatal(err)
		}
		return w.ID
	}
	fetch := func(w string) string {
		if _, err := c.Enqueue(ctx, "mail", nil, nil); err != nil {
			t.Fatal(err)
		}
		f, err := c.FetchJobs(ctx, hopper.FetchParams{Worker: w, Max: 1})
		if err != nil || len(f.Leases) != 1 {
			t.Fatalf("fetch: %+v, %v", f, err)
		}
		return f.Leases[0].Token
	}
	py, node, third, unnamed := register("py"), register("node"), register("ruby"), register("")
	tok := fetch(py)
	if _, err := c.CompleteJobs(ctx, py, "", []hopper.Completion{{Token: tok}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CompleteJobs(ctx, py, "", []hopper.Completion{{Token: tok}}); !errors.Is(err, hopper.ErrLeaseLost) {
		t.Fatalf("second completion: %v", err)
	}
	if _, err := c.FailJobs(ctx, node, "", []hopper.Failure{{Token: fetch(node), Error: "down"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SnoozeJobs(ctx, node, "", []hopper.RemoteSnooze{{Token: fetch(node)}}); err != nil {
		t.Fatal(err)
	}
	fetch(third)   // a third name: beyond the bound of 2
	fetch(unnamed) // a fourth
	got := scrape(t, m)
	for series, want := range map[string]float64{
		`hopper_remote_worker_jobs_total{outcome="fetched",worker="py"}`:      1,
		`hopper_remote_worker_jobs_total{outcome="completed",worker="py"}`:    1,
		`hopper_remote_worker_jobs_total{outcome="refused",worker="py"}`:      1,
		`hopper_remote_worker_jobs_total{outcome="fetched",worker="node"}`:    2,
		`hopper_remote_worker_jobs_total{outcome="failed",worker="node"}`:     1,
		`hopper_remote_worker_jobs_total{outcome="snoozed",worker="node"}`:    1,
		`hopper_remote_worker_jobs_total{outcome="fetched",worker="(other)"}`: 2,
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
	n := 0
	for series := range got {
		if len(series) > 32 && series[:32] == "hopper_remote_worker_jobs_total{" {
			n++
		}
	}
	if n != 7 {
		t.Errorf("%d series of hopper_remote_worker_jobs_total, want 7", n)
	}
}
