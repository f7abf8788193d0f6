package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

func enqueueCases() []testCase {
	return []testCase{
		{"EnqueueAssignsIncreasingIDs", func(t *testing.T, e *env) {
			first := e.enqueue(t0, &job.Job{Kind: "a"}, &job.Job{Kind: "b"}, &job.Job{Kind: "c"})
			second := e.enqueue(at(1), &job.Job{Kind: "d"}, &job.Job{Kind: "e"})
			var prev job.ID
			for i, r := range append(first, second...) {
				if r.Duplicate {
					t.Errorf("Enqueue result %d: got Duplicate, want a new job", i)
				}
				if r.ID <= 0 || r.ID <= prev {
					t.Errorf("Enqueue result %d: got ID %d after %d, want positive and increasing", i, r.ID, prev)
				}
				prev = r.ID
			}
		}},
		{"EnqueueReturnsStateByRunAt", func(t *testing.T, e *env) {
			res := e.enqueue(t0,
				&job.Job{Kind: "future", RunAt: at(1)},
				&job.Job{Kind: "now", RunAt: t0},
				&job.Job{Kind: "past", RunAt: at(-5000)},
				&job.Job{Kind: "unset"},
			)
			want := []job.State{job.StateScheduled, job.StateAvailable, job.StateAvailable, job.StateAvailable}
			for i, r := range res {
				if r.State != want[i] {
					t.Errorf("Enqueue result %d: got state %s, want %s", i, r.State, want[i])
				}
				if got := e.state(r.ID); got != want[i] {
					t.Errorf("Get(%d): got state %s, want %s", r.ID, got, want[i])
				}
			}
			wantTime(t, "past job RunAt", e.get(res[2].ID).RunAt, at(-5000))
			wantTime(t, "unset job RunAt", e.get(res[3].ID).RunAt, t0)
		}},
		{"EnqueueStoresEveryField", func(t *testing.T, e *env) {
			retry := backoff.List(time.Second, 3*time.Second)
			in := &job.Job{
				Kind: "send_email", Args: json.RawMessage(`{"to":"a@example.com","n":[1,2]}`),
				Queue: "mail", Priority: -7, RunAt: at(2500), MaxAttempts: 3,
				Timeout: 90 * time.Second, UniqueKey: "email-1", Retry: &retry,
			}
			id := e.add(at(1), in)
			g := e.get(id)
			if g.Kind != "send_email" || g.Queue != "mail" || g.Priority != -7 || g.MaxAttempts != 3 ||
				g.Timeout != 90*time.Second || g.UniqueKey != "email-1" {
				t.Errorf("Get: got kind %q queue %q priority %d max attempts %d timeout %s key %q, want send_email mail -7 3 1m30s email-1",
					g.Kind, g.Queue, g.Priority, g.MaxAttempts, g.Timeout, g.UniqueKey)
			}
			if !jsonEqual(g.Args, in.Args) {
				t.Errorf("Get Args: got %s, want %s", g.Args, in.Args)
			}
			if g.Retry == nil || g.Retry.Strategy != retry.Strategy || len(g.Retry.Delays) != 2 || g.Retry.Delays[1] != 3*time.Second {
				t.Errorf("Get Retry: got %+v, want %+v", g.Retry, retry)
			}
			if g.State != job.StateScheduled || g.Attempt != 0 || g.Crashes != 0 || g.CancelRequested ||
				g.Worker != "" || g.LastError != "" || len(g.Attempts) != 0 || len(g.Result) != 0 {
				t.Errorf("Get: got %+v, want a fresh scheduled job", g)
			}
			wantTime(t, "RunAt", g.RunAt, at(2500))
			wantTime(t, "CreatedAt", g.CreatedAt, at(1))
			for name, z := range map[string]time.Time{"StartedAt": g.StartedAt, "FinishedAt": g.FinishedAt, "LeaseUntil": g.LeaseUntil, "FireTime": g.FireTime} {
				if !z.IsZero() {
					t.Errorf("%s: got %v, want zero", name, z)
				}
			}
			d := e.get(e.add(t0, &job.Job{Kind: "defaults"}))
			if d.Queue != job.DefaultQueue || d.MaxAttempts != maxAttempts || d.Priority != 0 {
				t.Errorf("defaults: got queue %q max attempts %d priority %d, want %q %d 0", d.Queue, d.MaxAttempts, d.Priority, job.DefaultQueue, maxAttempts)
			}
		}},
		{"TimesAreReturnedInUTC", func(t *testing.T, e *env) {
			zone := time.FixedZone("UTC+5", 5*3600)
			id := e.add(t0.In(zone), &job.Job{Kind: "k", RunAt: at(1000).In(zone)})
			g := e.get(id)
			for name, tm := range map[string]time.Time{"RunAt": g.RunAt, "CreatedAt": g.CreatedAt} {
				if tm.Location() != time.UTC {
					t.Errorf("%s: got location %v, want UTC", name, tm.Location())
				}
			}
			wantTime(t, "RunAt", g.RunAt, at(1000))
			c := e.claim(store.ClaimParams{Now: at(1000).In(zone), Limit: 1, LeaseUntil: at(5000).In(zone)})
			if len(c.Jobs) != 1 {
				t.Fatalf("Claim: got IDs %v, want [%d]", idsOf(c.Jobs), id)
			}
			g = e.get(id)
			for name, tm := range map[string]time.Time{"StartedAt": g.StartedAt, "LeaseUntil": g.LeaseUntil} {
				if tm.Location() != time.UTC {
					t.Errorf("%s: got location %v, want UTC", name, tm.Location())
				}
			}
		}},
		{"EnqueueKeepsItsOwnCopy", func(t *testing.T, e *env) {
			in := &job.Job{Kind: "k", Args: json.RawMessage(`{"a":1}`), Queue: "q"}
			id := e.add(t0, in)
			// Args and Result are treated as immutable byte values: the suite
			// replaces them but never writes into them.
			in.Kind, in.Queue, in.Priority, in.Args = "changed", "other", 99, json.RawMessage(`{"a":2}`)
			g := e.get(id)
			if g.Kind != "k" || g.Queue != "q" || g.Priority != 0 || !jsonEqual(g.Args, []byte(`{"a":1}`)) {
				t.Errorf("Get after changing the enqueued job: got kind %q queue %q priority %d args %s, want k q 0 {\"a\":1}",
					g.Kind, g.Queue, g.Priority, g.Args)
			}
			g.Kind, g.State, g.Priority = "mutated", job.StateDead, 42
			g.Attempts = append(g.Attempts, job.Attempt{Attempt: 1})
			if g2 := e.get(id); g2.Kind != "k" || g2.State != job.StateAvailable || g2.Priority != 0 || len(g2.Attempts) != 0 {
				t.Errorf("Get after changing a returned job: got %+v, want it unchanged", g2)
			}
		}},
		{"EnqueueIsAllOrNothing", func(t *testing.T, e *env) {
			if e.opts.Closures {
				t.Skip("no portable way to make one job of a batch fail on a store that keeps closures")
			}
			batch := []*job.Job{
				validated(t, t0, &job.Job{Kind: "a", UniqueKey: "k"}),
				validated(t, t0, &job.Job{Func: func(context.Context) (any, error) { return nil, nil }}),
				validated(t, t0, &job.Job{Kind: "c"}),
			}
			_, err := e.s.Enqueue(e.ctx, store.EnqueueParams{Now: t0, Jobs: batch})
			if !errors.Is(err, job.ErrNotDurable) {
				t.Fatalf("Enqueue of a batch with a closure: got %v, want job.ErrNotDurable", err)
			}
			e.wantIDs("after a failed Enqueue")
			if r := e.enqueue(t0, &job.Job{Kind: "a", UniqueKey: "k"})[0]; r.Duplicate {
				t.Errorf("Enqueue after a failed batch: got a duplicate of job %d, want the key free", r.ID)
			}
		}},
		{"EnqueueClosures", func(t *testing.T, e *env) {
			fn := func(context.Context) (any, error) { return "hello", nil }
			j := validated(t, t0, &job.Job{Func: fn})
			res, err := e.s.Enqueue(e.ctx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}})
			if !e.opts.Closures {
				if !errors.Is(err, job.ErrNotDurable) {
					t.Errorf("Enqueue of a closure: got %v, %v, want job.ErrNotDurable", res, err)
				}
				e.wantIDs("after Enqueue of a closure")
				return
			}
			if err != nil || len(res) != 1 {
				t.Fatalf("Enqueue of a closure: got %v, %v, want one job", res, err)
			}
			g := e.get(res[0].ID)
			if g.Kind != "func" || g.Func == nil {
				t.Fatalf("Get: got kind %q, Func set %v, want func and true", g.Kind, g.Func != nil)
			}
			c := e.claimExpect(t0, job.DefaultQueue, res[0].ID)
			if c.Func == nil {
				t.Fatalf("Claim: got a job without its Func")
			}
			if v, err := c.Func(e.ctx); v != "hello" || err != nil {
				t.Errorf("claimed Func(): got %v, %v, want hello, nil", v, err)
			}
		}},
	}
}
