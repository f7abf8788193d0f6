package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
)

func TestEnqueue(t *testing.T) {
	t.Parallel()
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: store})
			at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
			body := fmt.Sprintf(`{"kind":"typed","args":{"n": 7},"queue":"q1","priority":-3,"max_attempts":4,"timeout":"30s",
				"retry":{"strategy":"fixed","base":"5s"},"run_at":%q,"unique_key":"k1"}`, at.Format(time.RFC3339))
			var res enqueued
			e.do("POST", "/api/v1/jobs", body).ok(http.StatusCreated, &res)
			if res.ID == 0 || res.State != hopper.StateScheduled || res.Duplicate {
				t.Fatalf("result %+v", res)
			}
			j := e.job(res.ID)
			if j.Kind != "typed" || string(j.Args) != `{"n": 7}` || j.Queue != "q1" || j.Priority != -3 || j.MaxAttempts != 4 ||
				j.Timeout != 30*time.Second || j.Retry == nil || j.Retry.Base != 5*time.Second || !j.RunAt.Equal(at) || j.UniqueKey != "k1" {
				t.Errorf("stored job %+v", j)
			}
			// The same unique key: the holder, 200, nothing inserted.
			var dup enqueued
			e.do("POST", "/api/v1/jobs", `{"kind":"ok","unique_key":"k1"}`).ok(http.StatusOK, &dup)
			if !dup.Duplicate || dup.ID != res.ID {
				t.Errorf("duplicate: %+v", dup)
			}
			// Delay, and a kind another process runs.
			var d enqueued
			e.do("POST", "/api/v1/jobs", `{"kind":"remote","delay":"10m"}`).ok(http.StatusCreated, &d)
			if d.State != hopper.StateScheduled {
				t.Errorf("delayed: %+v", d)
			}
			e.do("POST", "/api/v1/jobs", `{"kind":"ok"}`).ok(http.StatusCreated, &d)
			if d.State != hopper.StateAvailable {
				t.Errorf("now: %+v", d)
			}
			if n, _ := e.c.Count(context.Background(), hopper.ListOptions{}); n != 3 {
				t.Errorf("%d jobs stored, want 3", n)
			}
		})
	}
}

func TestEnqueueBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	big := `{"kind":"ok","args":"` + strings.Repeat("x", 1<<20) + `"}`
	huge := `{"kind":"ok","args":"` + strings.Repeat("x", 3<<20) + `"}`
	for _, tc := range []struct {
		body        string
		code, field string
		status      int
	}{
		{``, CodeInvalid, "body", 400},
		{`[]`, CodeInvalid, "body", 400},
		{`{"kind":"ok"} {}`, CodeInvalid, "body", 400},
		{`{"kind":"ok"`, CodeInvalid, "body", 400},
		{`{"kind":"ok","colour":"red"}`, CodeInvalid, "colour", 400},
		{`{"kind":""}`, CodeInvalid, "kind", 400},
		{`{"args":{}}`, CodeInvalid, "kind", 400},
		{`{"kind":"send_emial"}`, CodeInvalid, "kind", 400},
		{`{"kind":"typed","args":{"n":"seven"}}`, CodeInvalid, "args", 400},
		{`{"kind":"typed","args":{"m":1}}`, CodeInvalid, "args", 400},
		{`{"kind":7}`, CodeInvalid, "kind", 400},
		{`{"kind":"ok","priority":1.5}`, CodeInvalid, "priority", 400},
		{`{"kind":"ok","queue":""}`, CodeInvalid, "queue", 400},
		{`{"kind":"ok","queue":"` + strings.Repeat("q", 256) + `"}`, CodeInvalid, "queue", 400},
		{`{"kind":"ok","max_attempts":0}`, CodeInvalid, "max_attempts", 400},
		{`{"kind":"ok","timeout":"-1s"}`, CodeInvalid, "timeout", 400},
		{`{"kind":"ok","timeout":"soon"}`, CodeInvalid, "timeout", 400},
		{`{"kind":"ok","timeout":true}`, CodeInvalid, "timeout", 400},
		{`{"kind":"ok","timeout":30000000000}`, CodeInvalid, "timeout", 400}, // seconds: a Go time.Duration's nanoseconds are beyond range
		{`{"kind":"ok","delay":"-1s"}`, CodeInvalid, "delay", 400},
		{`{"kind":"ok","delay":"2000000h"}`, CodeInvalid, "delay", 400},
		{`{"kind":"ok","delay":"1s","run_at":"2030-01-01T00:00:00Z"}`, CodeInvalid, "delay", 400},
		{`{"kind":"ok","run_at":"tomorrow"}`, CodeInvalid, "run_at", 400},
		{`{"kind":"ok","run_at":"2300-01-01T00:00:00Z"}`, CodeInvalid, "run_at", 400},
		{`{"kind":"ok","unique_key":""}`, CodeInvalid, "unique_key", 400},
		{`{"kind":"ok","unique_key":"k\u0000"}`, CodeInvalid, "unique_key", 400},
		{`{"kind":"ok","queue":"a b\u0000"}`, CodeInvalid, "queue", 400},
		{`{"kind":"ok","unique_key":"` + strings.Repeat("k", 1025) + `"}`, CodeInvalid, "unique_key", 400},
		{`{"kind":"ok","retry":{"strategy":"sometimes"}}`, CodeInvalid, "retry.strategy", 400},
		{`{"kind":"ok","retry":{"base":"2h","max":"1h"}}`, CodeInvalid, "retry.base", 400},
		{`{"kind":"ok","retry":{"base":"fast"}}`, CodeInvalid, "retry.base", 400},
		{`{"kind":"ok","retry":{"strategy":"list","delays":["1s","x"]}}`, CodeInvalid, "retry.delays[1]", 400},
		{`{"kind":"ok","retry":{"colour":1}}`, CodeInvalid, "retry.colour", 400},
		{`{"kind":"ok","retry":[]}`, CodeInvalid, "retry", 400},
		{"{\"kind\":\"ok\",\"args\":\"caf\xe9\"}", CodeInvalid, "body", 400},
		{big, CodeInvalid, "args", 400},
		{huge, CodeTooLarge, "body", 400},
	} {
		r := e.do("POST", "/api/v1/jobs", tc.body)
		r.fails(tc.status, tc.code, tc.field)
	}
	if n, _ := e.c.Count(context.Background(), hopper.ListOptions{}); n != 0 {
		t.Errorf("%d jobs stored after bad requests", n)
	}
}

func TestEnqueueUniqueError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{cfg: func(c *hopper.Config) { c.UniqueConflict = hopper.UniqueError }})
	e.enqueue(`{"kind":"ok","unique_key":"once"}`)
	e.do("POST", "/api/v1/jobs", `{"kind":"ok","unique_key":"once"}`).fails(409, CodeDuplicate, "unique_key", "unique key")
}

func TestBatch(t *testing.T) {
	t.Parallel()
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: store})
			e.enqueue(`{"kind":"ok","unique_key":"u"}`)
			var res batchResult
			e.do("POST", "/api/v1/jobs/batch", `{"jobs":[{"kind":"ok"},{"kind":"typed","args":{"n":1},"queue":"b"},{"kind":"ok","unique_key":"u"}]}`).
				ok(http.StatusCreated, &res)
			if res.Enqueued != 2 || res.Duplicates != 1 || len(res.Jobs) != 3 || !res.Jobs[2].Duplicate || res.Jobs[1].ID <= res.Jobs[0].ID {
				t.Errorf("result %+v", res)
			}
			for _, tc := range []struct{ body, code, field string }{
				{`{"jobs":[]}`, CodeInvalid, "jobs"},
				{`{}`, CodeInvalid, "jobs"},
				{`{"jobs":{}}`, CodeInvalid, "jobs"},
				{`{"job":[{"kind":"ok"}]}`, CodeInvalid, "job"},
				{`{"jobs":[{"kind":"ok"},{"kind":"ok","queue":""}]}`, CodeInvalid, "jobs[1].queue"},
				{`{"jobs":[{"kind":"ok"},{"kind":"ok","colour":1}]}`, CodeInvalid, "jobs[1].colour"},
				{`{"jobs":[{"kind":"ok"},{"kind":"ok","priority":"high"}]}`, CodeInvalid, "jobs[1].priority"},
				{`{"jobs":[{"kind":"ok"},{"kind":"ok"},{"kind":"typed","args":{"n":"x"}}]}`, CodeInvalid, "jobs[2].args"},
				{`{"jobs":[{"kind":"nope"}]}`, CodeInvalid, "jobs[0].kind"},
				{`{"jobs":[{"kind":"ok","retry":{"jitter":"lots"}}]}`, CodeInvalid, "jobs[0].retry.jitter"},
			} {
				e.do("POST", "/api/v1/jobs/batch", tc.body).fails(400, tc.code, tc.field)
			}
			// The reason is in the args' own terms, as for one job: the
			// batch's error kept its cause (it named a Go type).
			if r := e.do("POST", "/api/v1/jobs/batch", `{"jobs":[{"kind":"ok"},{"kind":"typed","args":{"n":"x"}}]}`); strings.Contains(string(r.body), "do not fit") || !strings.Contains(string(r.body), `jobs[1].args`) {
				t.Errorf("batch with bad args: %s, want jobs[1].args and no Go type", r.body)
			}
			if n, _ := e.c.Count(context.Background(), hopper.ListOptions{}); n != 3 {
				t.Errorf("%d jobs stored, want 3: a bad batch stored some", n)
			}
			many := `{"jobs":[` + strings.TrimSuffix(strings.Repeat(`{"kind":"ok"},`, MaxBatch+1), ",") + `]}`
			e.do("POST", "/api/v1/jobs/batch", many).fails(400, CodeInvalid, "jobs", "limit")
		})
	}
}

func TestGetAndList(t *testing.T) {
	t.Parallel()
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: store})
			completed, dead, cancelled := e.finished()
			waiting := e.enqueue(`{"kind":"typed","args":{"n":3},"queue":"other"}`)

			var j hopper.Job
			e.do("GET", fmt.Sprintf("/api/v1/jobs/%d", dead), "").ok(200, &j)
			if j.State != hopper.StateDead || len(j.Attempts) != 1 || !strings.Contains(j.LastError, "failing on purpose") ||
				j.Attempts[0].Outcome != "dead" {
				t.Errorf("dead job: %+v", j)
			}
			e.do("GET", fmt.Sprintf("/api/v1/jobs/%d", completed), "").ok(200, &j)
			if string(j.Result) != `"done"` {
				t.Errorf("result %s", j.Result)
			}
			e.do("GET", "/api/v1/jobs/999", "").fails(404, CodeNotFound, "id", "job 999 not found")
			e.do("GET", "/api/v1/jobs/abc", "").fails(400, CodeInvalid, "id")
			e.do("GET", "/api/v1/jobs/0", "").fails(400, CodeInvalid, "id")
			e.do("GET", "/api/v1/jobs/-4", "").fails(400, CodeInvalid, "id")
			e.do("GET", "/api/v1/jobs/99999999999999999999", "").fails(400, CodeInvalid, "id")

			ids := func(path string) ([]hopper.ID, string) {
				t.Helper()
				var p jobPage
				e.do("GET", path, "").ok(200, &p)
				var out []hopper.ID
				for _, j := range p.Jobs {
					out = append(out, j.ID)
				}
				return out, p.NextCursor
			}
			check := func(path string, want []hopper.ID, wantCursor string) {
				t.Helper()
				got, cursor := ids(path)
				if fmt.Sprint(got) != fmt.Sprint(want) || cursor != wantCursor {
					t.Errorf("%s: %v cursor %q, want %v cursor %q", path, got, cursor, want, wantCursor)
				}
			}
			all := []hopper.ID{completed, dead, cancelled, waiting}
			check("/api/v1/jobs", all, "")
			check("/api/v1/jobs?order=desc", []hopper.ID{waiting, cancelled, dead, completed}, "")
			check("/api/v1/jobs?limit=2", all[:2], fmt.Sprint(dead))
			check(fmt.Sprintf("/api/v1/jobs?limit=2&cursor=%d", dead), all[2:], "")
			check("/api/v1/jobs?state=finished", all[:3], "")
			check("/api/v1/jobs?state=dead,cancelled", []hopper.ID{dead, cancelled}, "")
			check("/api/v1/jobs?state=dead&state=available", []hopper.ID{dead, waiting}, "")
			check("/api/v1/jobs?state=waiting", []hopper.ID{waiting}, "")
			check("/api/v1/jobs?queue=other", []hopper.ID{waiting}, "")
			check("/api/v1/jobs?kind=fail", []hopper.ID{dead}, "")
			check("/api/v1/jobs?created_after=2000-01-01T00:00:00Z&created_before=2199-01-01T00:00:00Z", all, "")
			check("/api/v1/jobs?created_before=2000-01-01T00:00:00Z", nil, "")
			future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
			check("/api/v1/jobs?created_after="+future, nil, "")

			for _, tc := range []struct{ path, field string }{
				{"/api/v1/jobs?state=sleeping", "state"},
				{"/api/v1/jobs?sate=dead", "sate"},
				{"/api/v1/jobs?limit=0", "limit"},
				{"/api/v1/jobs?limit=1001", "limit"},
				{"/api/v1/jobs?limit=x", "limit"},
				{"/api/v1/jobs?limit=1&limit=2", "limit"},
				{"/api/v1/jobs?cursor=-1", "cursor"},
				{"/api/v1/jobs?order=up", "order"},
				{"/api/v1/jobs?queue=", "queue"},
				{"/api/v1/jobs?queue=%20", "queue"},
				{"/api/v1/jobs?kind=a%00", "kind"},
				{"/api/v1/jobs/count?queue=a%00", "queue"},
				{"/api/v1/schedules/a%00", "name"},
				{"/api/v1/jobs?cursor=", "cursor"},
				{"/api/v1/jobs?state=", "state"},
				{"/api/v1/jobs?created_after=yesterday", "created_after"},
				{"/api/v1/jobs?created_after=2030-01-01T00:00:00Z&created_before=2029-01-01T00:00:00Z", "created_before"},
				{"/api/v1/jobs?created_before=3000-01-01T00:00:00Z", "created_before"},
				{"/api/v1/jobs?%zz", "query"},
			} {
				e.do("GET", tc.path, "").fails(400, CodeInvalid, tc.field)
			}
		})
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.finished()
	e.enqueue(`{"kind":"ok","queue":"q2"}`)
	for path, want := range map[string]int{
		"/api/v1/jobs/count":                          4,
		"/api/v1/jobs/count?state=finished":           3,
		"/api/v1/jobs/count?state=available&queue=q2": 1,
		"/api/v1/jobs/count?kind=fail":                1,
	} {
		var got struct{ Count int }
		e.do("GET", path, "").ok(200, &got)
		if got.Count != want {
			t.Errorf("%s: %d, want %d", path, got.Count, want)
		}
	}
	e.do("GET", "/api/v1/jobs/count?created_after=2020-01-01T00:00:00Z", "").fails(400, CodeInvalid, "created_after")
	e.do("GET", "/api/v1/jobs/count?state=nope", "").fails(400, CodeInvalid, "state")
}

func TestCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	completed, dead, cancelled := e.finished()
	waiting := e.enqueue(`{"kind":"ok","delay":"1h"}`)
	var j hopper.Job
	e.do("POST", fmt.Sprintf("/api/v1/jobs/%d/cancel", waiting), "").ok(200, &j)
	if j.State != hopper.StateCancelled {
		t.Errorf("waiting job after cancel: %s", j.State)
	}
	e.do("POST", fmt.Sprintf("/api/v1/jobs/%d/cancel", cancelled), "{}").ok(200, &j) // already: fine
	e.do("POST", fmt.Sprintf("/api/v1/jobs/%d/cancel", completed), "").fails(409, CodeConflict, "id", "completed")
	e.do("POST", fmt.Sprintf("/api/v1/jobs/%d/cancel", dead), "").fails(409, CodeConflict, "id", "dead")
	e.do("POST", "/api/v1/jobs/777/cancel", "").fails(404, CodeNotFound, "id")
	e.do("POST", "/api/v1/jobs/x/cancel", "").fails(400, CodeInvalid, "id")
	e.do("POST", fmt.Sprintf("/api/v1/jobs/%d/cancel", waiting), `{"now":true}`).fails(400, CodeInvalid, "now")
	e.do("GET", fmt.Sprintf("/api/v1/jobs/%d/cancel", waiting), "").fails(405, CodeMethodNotAllowed, "")

	// A running job is asked to stop, and ends cancelled.
	id, done := e.running()
	e.do("POST", fmt.Sprintf("/api/v1/jobs/%d/cancel", id), "").ok(200, &j)
	if j.State != hopper.StateRunning || !j.CancelRequested {
		t.Errorf("running job after cancel: %s, cancel_requested %v", j.State, j.CancelRequested)
	}
	if j := <-done; j.State != hopper.StateCancelled {
		t.Errorf("running job ended %s", j.State)
	}
}

func TestReschedule(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	completed, _, _ := e.finished()
	waiting := e.enqueue(`{"kind":"ok","delay":"1h"}`)
	at := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	var j hopper.Job
	path := fmt.Sprintf("/api/v1/jobs/%d/reschedule", waiting)
	e.do("POST", path, fmt.Sprintf(`{"run_at":%q,"priority":-9}`, at.Format(time.RFC3339))).ok(200, &j)
	if !j.RunAt.Equal(at) || j.Priority != -9 || j.State != hopper.StateScheduled {
		t.Errorf("rescheduled: %s %d %s", j.RunAt, j.Priority, j.State)
	}
	e.do("POST", path, `{"delay":"0s"}`).ok(200, &j)
	if j.State != hopper.StateAvailable {
		t.Errorf("rescheduled to now: %s", j.State)
	}
	e.do("POST", path, `{"priority":4}`).ok(200, &j)
	if j.Priority != 4 {
		t.Errorf("priority %d", j.Priority)
	}
	for _, tc := range []struct{ body, field string }{
		{`{}`, "run_at"},
		{``, "body"},
		{`{"delay":"1s","run_at":"2030-01-01T00:00:00Z"}`, "delay"},
		{`{"delay":"-1m"}`, "delay"},
		{`{"delay":"forever"}`, "delay"},
		{`{"run_at":"2300-01-01T00:00:00Z"}`, "run_at"},
		{`{"run_at":"2030-01-01"}`, "run_at"},
		{`{"priority":"high"}`, "priority"},
		{`{"when":"now"}`, "when"},
	} {
		e.do("POST", path, tc.body).fails(400, CodeInvalid, tc.field)
	}
	e.do("POST", fmt.Sprintf("/api/v1/jobs/%d/reschedule", completed), `{"delay":"1m"}`).fails(409, CodeConflict, "id", "completed")
	e.do("POST", "/api/v1/jobs/4242/reschedule", `{"delay":"1m"}`).fails(404, CodeNotFound, "id")
}

func TestDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	completed, dead, cancelled := e.finished()
	waiting := e.enqueue(`{"kind":"ok","delay":"1h"}`)
	e.do("DELETE", fmt.Sprintf("/api/v1/jobs/%d", waiting), "").fails(409, CodeConflict, "id", "cancel it first")
	e.do("DELETE", "/api/v1/jobs/555", "").fails(404, CodeNotFound, "id")
	var res struct{ Deleted int }
	e.do("DELETE", fmt.Sprintf("/api/v1/jobs/%d", completed), "").ok(200, &res)
	if res.Deleted != 1 {
		t.Errorf("deleted %d", res.Deleted)
	}
	e.do("POST", "/api/v1/jobs/delete", fmt.Sprintf(`{"ids":[%d,%d,%d,999]}`, dead, cancelled, waiting)).ok(200, &res)
	if res.Deleted != 2 {
		t.Errorf("deleted %d, want 2 (the waiting job stays)", res.Deleted)
	}
	for _, tc := range []struct{ body, field string }{
		{`{"ids":[]}`, "ids"},
		{`{}`, "ids"},
		{`{"ids":[0]}`, "ids[0]"},
		{`{"ids":[1,-2]}`, "ids[1]"},
		{`{"ids":["1"]}`, "ids"},
		{`{"all":true}`, "all"},
	} {
		e.do("POST", "/api/v1/jobs/delete", tc.body).fails(400, CodeInvalid, tc.field)
	}
	if n, _ := e.c.Count(context.Background(), hopper.ListOptions{}); n != 1 {
		t.Errorf("%d jobs left, want 1", n)
	}
}

// TestEnqueueDocumentForms: the job request is internal/wire's, the same
// as an enqueue --bulk line's: a bare number is seconds, a retry policy is
// an object or its compact string, and a priority of 0 is the priority 0
// over the kind's default.
func TestEnqueueDocumentForms(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	j := e.job(e.enqueue(`{"kind":"ok","timeout":1.5,"retry":"fixed:5s","priority":0}`))
	if j.Timeout != 1500*time.Millisecond || j.Retry == nil || j.Retry.Strategy != backoff.StrategyFixed || j.Retry.Base != 5*time.Second || j.Priority != 0 {
		t.Errorf("job %+v: want timeout 1.5s, retry fixed:5s, priority 0", j)
	}
	e.do("POST", "/api/v1/jobs", `{"kind":"ok","retry":"fixed:0s"}`).fails(400, CodeInvalid, "retry", "DELAY must be positive")
}

// TestEnqueueDebounce: a debounced enqueue of a key whose job waits merges
// into it (200, debounced, its args replaced); bad debounces name their
// field.
func TestEnqueueDebounce(t *testing.T) {
	t.Parallel()
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: store})
			var first, second enqueued
			e.do("POST", "/api/v1/jobs", `{"kind":"typed","args":{"n":1},"unique_key":"d","debounce":{"period":"1h","max_wait":"2h"}}`).ok(http.StatusCreated, &first)
			if first.Debounced || first.Duplicate || first.State != hopper.StateScheduled {
				t.Fatalf("first: %+v", first)
			}
			e.do("POST", "/api/v1/jobs", `{"kind":"typed","args":{"n":2},"unique_key":"d","debounce":{"period":3600}}`).ok(http.StatusOK, &second)
			if !second.Debounced || second.Duplicate || second.ID != first.ID {
				t.Errorf("second: %+v, want debounced into job %d", second, first.ID)
			}
			if j := e.job(first.ID); string(j.Args) != `{"n":2}` {
				t.Errorf("job args %s, want the last enqueue's", j.Args)
			}
			var batch batchResult
			e.do("POST", "/api/v1/jobs/batch", `{"jobs":[{"kind":"typed","args":{"n":3},"unique_key":"d","debounce":{"period":"1h"}},{"kind":"ok"}]}`).ok(http.StatusCreated, &batch)
			if batch.Debounced != 1 || batch.Enqueued != 1 || !batch.Jobs[0].Debounced || batch.Jobs[0].ID != first.ID {
				t.Errorf("batch: %+v", batch)
			}
			e.do("POST", "/api/v1/jobs", `{"kind":"ok","debounce":{"period":"1s"}}`).fails(400, CodeInvalid, "debounce", "unique")
			e.do("POST", "/api/v1/jobs", `{"kind":"ok","unique_key":"x","debounce":{}}`).fails(400, CodeInvalid, "debounce.period", "missing")
			e.do("POST", "/api/v1/jobs", `{"kind":"ok","unique_key":"x","debounce":{"period":"1m","max_wait":"1s"}}`).fails(400, CodeInvalid, "debounce.max_wait", "shorter")
			e.do("POST", "/api/v1/jobs", `{"kind":"ok","unique_key":"x","delay":"1s","debounce":{"period":"1m"}}`).fails(400, CodeInvalid, "debounce", "delay")
		})
	}
}
