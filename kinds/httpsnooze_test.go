package kinds

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// TestHTTPRetryAfterSnoozes: a 429 or 503 with a Retry-After header snoozes
// the job for the delay asked, within MinHTTPRetryAfter and
// MaxHTTPRetryAfter; without the header, or with one that does not parse,
// the attempt fails as before.
func TestHTTPRetryAfterSnoozes(t *testing.T) {
	t.Parallel()
	url := server(t, func(w http.ResponseWriter, r *http.Request) {
		code, after, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if after != "" {
			if after == "date" {
				after = time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
			}
			w.Header().Set("Retry-After", after)
		}
		http.Error(w, "slow down", map[string]int{"429": 429, "503": 503, "500": 500}[code])
	})
	for _, tc := range []struct {
		path      string
		snooze    bool
		min, max  time.Duration
		permanent bool
	}{
		{path: "/429/30", snooze: true, min: 30 * time.Second, max: 30 * time.Second},
		{path: "/503/120", snooze: true, min: 2 * time.Minute, max: 2 * time.Minute},
		{path: "/429/date", snooze: true, min: 80 * time.Second, max: 90 * time.Second},
		{path: "/429/0", snooze: true, min: MinHTTPRetryAfter, max: MinHTTPRetryAfter},
		{path: "/429/99999999999999999999", snooze: true, min: MaxHTTPRetryAfter, max: MaxHTTPRetryAfter},
		{path: "/429/86400", snooze: true, min: MaxHTTPRetryAfter, max: MaxHTTPRetryAfter},
		{path: "/429/soon"},
		{path: "/429"},
		{path: "/500/30"}, // only 429 and 503 ask to come back later
	} {
		res, err := loopback().Run(context.Background(), HTTPArgs{URL: url + tc.path})
		sn := job.SnoozeOf(err)
		switch {
		case err == nil || res == nil:
			t.Errorf("%s: got %v, %v; want an error with the result", tc.path, res, err)
		case (sn != nil) != tc.snooze:
			t.Errorf("%s: snooze %v (%v), want %v", tc.path, sn != nil, err, tc.snooze)
		case sn != nil && (sn.Delay < tc.min || sn.Delay > tc.max):
			t.Errorf("%s: snoozed for %s, want %s to %s", tc.path, sn.Delay, tc.min, tc.max)
		case sn != nil && !strings.Contains(err.Error(), "slow down"):
			t.Errorf("%s: error %q lacks the response", tc.path, err)
		case hopper.IsPermanent(err):
			t.Errorf("%s: permanent error %v", tc.path, err)
		}
	}
}

// TestHTTPHostileRetryAfterBounded: a server that answers every request
// with 429 and a Retry-After of a year cannot keep a job waiting: each
// snooze lasts MaxHTTPRetryAfter at most, and after Config.MaxSnoozes in a
// row a snooze counts as a failed attempt, so the job ends dead once its
// attempts are used up (docs/security.md).
func TestHTTPHostileRetryAfterBounded(t *testing.T) {
	t.Parallel()
	calls := 0
	url := server(t, func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Retry-After", "31536000")
		http.Error(w, "go away", http.StatusTooManyRequests)
	})
	ws := hopper.NewWorkers()
	if err := RegisterWith(ws, Options{Kinds: []string{KindHTTP}, HTTP: allowLoopback}); err != nil {
		t.Fatal(err)
	}
	c, err := hopper.NewClient(hopper.Config{Workers: ws, MaxSnoozes: 2, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	ctx := context.Background()
	t0 := time.Now()
	res, err := c.Enqueue(ctx, KindHTTP, HTTPArgs{URL: url}, &hopper.EnqueueOptions{MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	now, steps := t0.Add(time.Second), 0
	for {
		j, ok, err := c.ProcessNext(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Fatalf("step %d: nothing due at t0+%s", steps, now.Sub(t0))
		}
		steps++
		if j.State == hopper.StateDead {
			break
		}
		if j.State == hopper.StateScheduled && j.RunAt.Sub(now) != MaxHTTPRetryAfter {
			t.Errorf("step %d: snoozed until %s later, want the cap %s", steps, j.RunAt.Sub(now), MaxHTTPRetryAfter)
		}
		if steps > 10 {
			t.Fatalf("job %d still %s after %d attempts", res.ID, j.State, steps)
		}
		now = j.RunAt.Add(time.Millisecond)
	}
	// Two attempts of three requests each: two snoozes, then one that counts.
	if steps != 6 || calls != 6 {
		t.Errorf("got %d steps and %d requests, want 6 and 6", steps, calls)
	}
	j, err := c.Get(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(j.LastError, "snoozed 2 times in a row") {
		t.Errorf("last error %q, want the snooze limit named", j.LastError)
	}
}
