package hopper_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// TestQueueRateDurable is the throttle's acceptance at reduced scale: three
// clients on one PostgreSQL schema (and on one SQLite file), 8 workers
// each, work a backlog of 250 jobs in a queue throttled to 100/s with a
// burst of 10. The starts are read from the store (each job's started_at,
// the time of the claim that started it, on the store's clock): every
// sliding window of w holds at most 10 + w/10ms of them — 110 in any
// second — and the backlog is worked at 97/s or more when the workers
// claim in time. With HOPPER_ACCEPTANCE=full it is issue 21's acceptance
// 6 at full length on PostgreSQL: 60,000 jobs, ten minutes of backlog.
func TestQueueRateDurable(t *testing.T) {
	t.Parallel()
	stores, jobs, limit := []string{"sqlite", "postgres"}, 250, time.Minute
	if os.Getenv("HOPPER_ACCEPTANCE") == "full" {
		stores, jobs, limit = []string{"postgres"}, 60000, 15*time.Minute
	}
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			url := sharedStoreURL(t, st)
			const burst = 10
			rate := hopper.Rate{N: 100, Period: time.Second, Burst: burst}
			interval := rate.Period / time.Duration(rate.N)
			ws := hopper.NewWorkers()
			hopper.RegisterRaw(ws, "call", func(ctx context.Context, _ json.RawMessage) (any, error) { return nil, nil }, nil)
			ctx := context.Background()
			clients := openClients(t, url, 3, ws)
			if err := clients[0].SetQueueRate(ctx, "api", rate); err != nil {
				t.Fatal(err)
			}
			for _, c := range clients {
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
			}
			wctx, cancel := context.WithTimeout(ctx, limit)
			defer cancel()
			// Warm up (connections, statements) on another queue first.
			warm := make([]hopper.EnqueueRequest, 30)
			for i := range warm {
				warm[i] = hopper.EnqueueRequest{Kind: "call", Options: &hopper.EnqueueOptions{Queue: "warm"}}
			}
			wres, err := clients[0].EnqueueMany(ctx, warm)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range wres {
				if _, err := clients[0].Wait(wctx, r.ID); err != nil {
					t.Fatal(err)
				}
			}
			reqs := make([]hopper.EnqueueRequest, jobs)
			for i := range reqs {
				reqs[i] = hopper.EnqueueRequest{Kind: "call", Options: &hopper.EnqueueOptions{Queue: "api"}}
			}
			res, err := clients[0].EnqueueMany(ctx, reqs)
			if err != nil {
				t.Fatal(err)
			}
			starts := make([]time.Time, 0, jobs)
			for _, r := range res {
				j, err := clients[0].Wait(wctx, r.ID)
				if err != nil || j.State != hopper.StateCompleted {
					t.Fatalf("job %d: %v, %v", r.ID, j, err)
				}
				starts = append(starts, j.StartedAt)
			}
			slices.SortFunc(starts, time.Time.Compare)
			for _, w := range []time.Duration{0, interval, 100 * time.Millisecond, time.Second} {
				bound := burst + int(w/interval)
				if got := mostInWindow(starts, w); got > bound {
					t.Errorf("%d starts in a window of %v, bound %d", got, w, bound)
				} else if w == time.Second {
					t.Logf("%s: at most %d starts in any sliding second (bound %d)", st, got, bound)
				}
			}
			// The rate: the starts after the burst over the run. GCRA keeps
			// it at 100/s exactly while every claim comes within the
			// burst's tolerance of the one before ((burst-1) intervals);
			// when this loaded 2-core machine (or -race) made the workers
			// later than that, the tokens they missed are gone, which
			// says nothing about the throttle: the figure is logged, not
			// checked.
			span := starts[len(starts)-1].Sub(starts[0])
			var late time.Duration
			for i := 1; i < len(starts); i++ {
				late = max(late, starts[i].Sub(starts[i-1]))
			}
			sustained := float64(jobs-burst) / span.Seconds()
			t.Logf("%s: %d starts after the burst in %v: %.1f/s sustained; longest gap %v", st, jobs-burst, span, sustained, late)
			switch tolerance := time.Duration(burst-1) * interval; {
			case late > tolerance:
				t.Logf("a gap of %v between starts, over the burst's tolerance %v: the machine was late; the rate is not checked", late, tolerance)
			case sustained < 97:
				t.Errorf("sustained rate %.1f/s, want at least 97/s", sustained)
			}
		})
	}
}

// mostInWindow returns the most of starts (sorted) in any closed window of
// length w.
func mostInWindow(starts []time.Time, w time.Duration) int {
	best, j := 0, 0
	for i := range starts {
		for starts[i].Sub(starts[j]) > w {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}
