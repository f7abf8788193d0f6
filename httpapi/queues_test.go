package httpapi

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/statsview"
)

// TestQueues: GET /queues lists a paused queue with its held job, a
// waiting job's GET says why it waits, POST …/resume lets it run; on every
// store.
func TestQueues(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: st})
			id := e.enqueue(`{"kind":"ok","queue":"mail"}`)
			var q statsview.Queue
			e.do("POST", "/api/v1/queues/mail/pause", "").ok(200, &q)
			if q.Name != "mail" || !q.Paused || q.PausedAt == nil || q.Held != 1 || q.Counts["available"] != 1 {
				t.Errorf("pause: %+v, want mail paused with 1 held", q)
			}
			var qs struct{ Queues []statsview.Queue }
			e.do("GET", "/api/v1/queues", "").ok(200, &qs)
			if len(qs.Queues) != 1 || !qs.Queues[0].Paused || qs.Queues[0].Held != 1 {
				t.Errorf("GET /queues: %+v", qs)
			}
			var j struct {
				State      string `json:"state"`
				WaitReason string `json:"wait_reason"`
			}
			e.do("GET", "/api/v1/jobs/"+strconv.FormatInt(int64(id), 10), "").ok(200, &j)
			if j.State != "available" || j.WaitReason != "queue mail paused" {
				t.Errorf("GET the held job: %+v, want available, waiting as queue mail paused", j)
			}
			if _, ok, err := e.c.ProcessNext(t.Context(), time.Now()); ok || err != nil {
				t.Fatalf("ProcessNext with the queue paused: %v, %v", ok, err)
			}
			e.do("POST", "/api/v1/queues/mail/resume", "").ok(200, &q)
			if q.Paused || q.PausedAt != nil || q.Held != 0 {
				t.Errorf("resume: %+v, want mail active", q)
			}
			e.do("GET", "/api/v1/jobs/"+strconv.FormatInt(int64(id), 10), "").ok(200, &j)
			if j.WaitReason != "" {
				t.Errorf("GET the job after the resume: wait_reason %q", j.WaitReason)
			}
			if got := e.run(); got.ID != id || got.State != hopper.StateCompleted {
				t.Errorf("run after the resume: job %d %s, want %d completed", got.ID, got.State, id)
			}
			// A queue without jobs may be paused; a bad name is refused.
			e.do("POST", "/api/v1/queues/empty/pause", "").ok(200, &q)
			if !q.Paused || q.Name != "empty" {
				t.Errorf("pause of an empty queue: %+v", q)
			}
			e.do("POST", "/api/v1/queues/%20/pause", "").fails(400, CodeInvalid, "name")
			// A limit: set, shown, refused when bad, removed.
			e.do("POST", "/api/v1/queues/mail/limits", `{"concurrency":1}`).ok(200, &q)
			if q.Concurrency != 1 || q.Slots != 0 {
				t.Errorf("limits: %+v, want concurrency 1", q)
			}
			block := e.enqueue(`{"kind":"ok","queue":"mail"}`)
			if _, err := e.c.QueueStates(t.Context()); err != nil {
				t.Fatal(err)
			}
			e.do("POST", "/api/v1/queues/mail/limits", `{"concurrency":-1}`).fails(400, CodeInvalid, "concurrency")
			e.do("POST", "/api/v1/queues/mail/limits", `{}`).fails(400, CodeInvalid, "concurrency")
			e.do("POST", "/api/v1/queues/mail/limits", `{"concurrency":1,"rate":2}`).fails(400, CodeInvalid, "rate")
			e.do("POST", "/api/v1/queues/mail/limits", `{"concurrency":0}`).ok(200, &q)
			if q.Concurrency != 0 {
				t.Errorf("limits 0: %+v, want no limit", q)
			}
			if got := e.run(); got.ID != block {
				t.Errorf("run: job %d, want %d", got.ID, block)
			}
			e.do("POST", "/api/v1/queues/mail/pause", `{"x":1}`).fails(400, CodeInvalid, "x")
		})
	}
}

// TestQueuesScope: listing needs read; pausing, resuming and setting
// limits write.
func TestQueuesScope(t *testing.T) {
	t.Parallel()
	auth := &httpauth.Auth{Logger: slog.New(slog.DiscardHandler)}
	if err := auth.ParseTokens("r=read:" + readToken + ",w=write:" + writeToken); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{auth: auth})
	e.doAs(readToken, "GET", "/api/v1/queues", "").ok(200, nil)
	e.doAs(readToken, "POST", "/api/v1/queues/q/pause", "").fails(403, CodeForbidden, "")
	e.doAs(readToken, "POST", "/api/v1/queues/q/resume", "").fails(403, CodeForbidden, "")
	e.doAs("", "GET", "/api/v1/queues", "").fails(401, CodeUnauthorized, "")
	e.doAs(writeToken, "POST", "/api/v1/queues/q/pause", "").ok(200, nil)
	e.doAs(writeToken, "POST", "/api/v1/queues/q/resume", "").ok(200, nil)
	e.doAs(readToken, "POST", "/api/v1/queues/q/limits", `{"concurrency":1}`).fails(403, CodeForbidden, "")
	e.doAs(writeToken, "POST", "/api/v1/queues/q/limits", `{"concurrency":1}`).ok(200, nil)
	e.doAs(readToken, "POST", "/api/v1/queues/q/limits", `{"rate":"1/1s"}`).fails(403, CodeForbidden, "")
	e.doAs(writeToken, "POST", "/api/v1/queues/q/limits", `{"rate":"1/1s"}`).ok(200, nil)
	e.doAs(readToken, "POST", "/api/v1/queues/q/limits", `{"key_rate":"1/1s","key_drop":true}`).fails(403, CodeForbidden, "")
	e.doAs(writeToken, "POST", "/api/v1/queues/q/limits", `{"key_rate":"1/1s","key_drop":true}`).ok(200, nil)
}

// TestQueueRateAPI: POST …/limits sets a throttle, shown by GET /queues
// and by a held job's wait_reason; burst without a rate, a bad rate or
// burst, and a bad concurrency beside a good rate are refused and change
// nothing; "none" removes it; on every store.
func TestQueueRateAPI(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: st})
			var q statsview.Queue
			e.do("POST", "/api/v1/queues/mail/limits", `{"rate":"1/1h","burst":2}`).ok(200, &q)
			if q.Rate != "1/1h" || q.Burst != 2 || q.Drop || q.ThrottledUntil != nil {
				t.Errorf("limits rate: %+v, want 1/1h burst 2", q)
			}
			var ids []hopper.ID
			for range 3 {
				ids = append(ids, e.enqueue(`{"kind":"ok","queue":"mail"}`))
			}
			e.run()
			e.run()
			if _, ok, err := e.c.ProcessNext(t.Context(), time.Now()); ok || err != nil {
				t.Fatalf("ProcessNext past the burst: %v, %v; want nothing", ok, err)
			}
			var j struct {
				State      string `json:"state"`
				WaitReason string `json:"wait_reason"`
			}
			e.do("GET", "/api/v1/jobs/"+strconv.FormatInt(int64(ids[2]), 10), "").ok(200, &j)
			if j.State != "available" || !strings.HasPrefix(j.WaitReason, "queue mail throttled until ") {
				t.Errorf("GET the throttled job: %+v", j)
			}
			var qs struct{ Queues []statsview.Queue }
			e.do("GET", "/api/v1/queues", "").ok(200, &qs)
			if len(qs.Queues) != 1 || qs.Queues[0].Rate != "1/1h" || qs.Queues[0].Throttled != 1 || qs.Queues[0].ThrottledUntil == nil {
				t.Errorf("GET /queues: %+v, want mail at 1/1h with 1 throttled", qs)
			}
			e.do("POST", "/api/v1/queues/mail/limits", `{"burst":3}`).fails(400, CodeInvalid, "rate")
			e.do("POST", "/api/v1/queues/mail/limits", `{"rate":"fast"}`).fails(400, CodeInvalid, "rate")
			e.do("POST", "/api/v1/queues/mail/limits", `{"rate":"1/1s","burst":-1}`).fails(400, CodeInvalid, "burst")
			e.do("POST", "/api/v1/queues/mail/limits", `{"rate":"5/1s","concurrency":-1}`).fails(400, CodeInvalid, "concurrency")
			e.do("GET", "/api/v1/queues", "").ok(200, &qs)
			if len(qs.Queues) != 1 || qs.Queues[0].Rate != "1/1h" || qs.Queues[0].Burst != 2 || qs.Queues[0].Concurrency != 0 {
				t.Errorf("GET /queues after refused limits: %+v, want mail at 1/1h burst 2", qs)
			}
			e.do("POST", "/api/v1/queues/mail/limits", `{"rate":"10/1s","drop":true}`).ok(200, &q)
			if q.Rate != "10/1s" || !q.Drop || q.Burst != 1 {
				t.Errorf("limits drop: %+v, want 10/1s drop", q)
			}
			e.do("POST", "/api/v1/queues/mail/limits", `{"rate":"none"}`).ok(200, &q)
			if q.Rate != "" || q.ThrottledUntil != nil {
				t.Errorf("limits none: %+v, want no rate", q)
			}
			if got := e.run(); got.ID != ids[2] {
				t.Errorf("run after removing the rate: job %d, want %d", got.ID, ids[2])
			}
		})
	}
}

// TestQueueKeyRateAPI: POST /queues/{name}/limits sets and clears a rate
// per key; GET /queues shows it; a throttled key's job says why it waits
// and the queue's other keys go on; bad input names its field and changes
// nothing.
func TestQueueKeyRateAPI(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: st})
			var q statsview.Queue
			e.do("POST", "/api/v1/queues/mail/limits", `{"key_rate":"1/1h","key_burst":2}`).ok(200, &q)
			if q.KeyRate != "1/1h" || q.KeyBurst != 2 || q.Rate != "" {
				t.Errorf("limits key_rate: %+v, want 1/1h burst 2 per key", q)
			}
			var ids []hopper.ID
			for range 3 {
				ids = append(ids, e.enqueue(`{"kind":"ok","queue":"mail","key":"tenant=42"}`))
			}
			other := e.enqueue(`{"kind":"ok","queue":"mail","key":"tenant=7"}`)
			ran := map[hopper.ID]bool{}
			for range 3 {
				ran[e.run().ID] = true
			}
			if !ran[ids[0]] || !ran[ids[1]] || !ran[other] {
				t.Fatalf("ran %v, want the burst of tenant=42 (%d, %d) and tenant=7's %d", ran, ids[0], ids[1], other)
			}
			if _, ok, err := e.c.ProcessNext(t.Context(), time.Now()); ok || err != nil {
				t.Fatalf("ProcessNext past the key's burst: %v, %v; want nothing", ok, err)
			}
			var j struct {
				State      string `json:"state"`
				WaitReason string `json:"wait_reason"`
			}
			e.do("GET", "/api/v1/jobs/"+strconv.FormatInt(int64(ids[2]), 10), "").ok(200, &j)
			if j.State != "available" || !strings.HasPrefix(j.WaitReason, "key tenant=42 throttled until ") {
				t.Errorf("GET the throttled key's job: %+v", j)
			}
			e.do("POST", "/api/v1/queues/mail/limits", `{"key_burst":3}`).fails(400, CodeInvalid, "key_rate")
			e.do("POST", "/api/v1/queues/mail/limits", `{"key_rate":"fast"}`).fails(400, CodeInvalid, "key_rate")
			e.do("POST", "/api/v1/queues/mail/limits", `{"key_rate":"1/0s"}`).fails(400, CodeInvalid, "key_rate")
			e.do("POST", "/api/v1/queues/mail/limits", `{"key_rate":"1/1s","key_burst":-1}`).fails(400, CodeInvalid, "key_burst")
			e.do("POST", "/api/v1/queues/mail/limits", `{"key_rate":"5/1s","concurrency":-1}`).fails(400, CodeInvalid, "concurrency")
			e.do("POST", "/api/v1/queues/mail/limits", `{"concurrency":3,"key_rate":"5/1s","key_burst":-1}`).fails(400, CodeInvalid, "key_burst")
			var qs struct{ Queues []statsview.Queue }
			e.do("GET", "/api/v1/queues", "").ok(200, &qs)
			if len(qs.Queues) != 1 || qs.Queues[0].KeyRate != "1/1h" || qs.Queues[0].KeyBurst != 2 || qs.Queues[0].Concurrency != 0 {
				t.Errorf("GET /queues after refused limits: %+v, want mail at 1/1h burst 2 per key", qs)
			}
			e.do("POST", "/api/v1/queues/mail/limits", `{"key_rate":"none"}`).ok(200, &q)
			if q.KeyRate != "" || q.KeyBurst != 0 {
				t.Errorf("limits key_rate none: %+v, want no rate per key", q)
			}
			if got := e.run(); got.ID != ids[2] {
				t.Errorf("run after removing the rate per key: job %d, want %d", got.ID, ids[2])
			}
		})
	}
}

// TestQueueKeyDropAPI: key_drop on the limits route drops each key's
// excess with its reason, GET /queues reports it, key_rate without
// key_drop holds the excess again, and key_drop without key_rate is
// refused.
func TestQueueKeyDropAPI(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: st})
			var q statsview.Queue
			e.do("POST", "/api/v1/queues/mail/limits", `{"key_rate":"1/1h","key_drop":true}`).ok(200, &q)
			if q.KeyRate != "1/1h" || !q.KeyDrop || q.Drop {
				t.Errorf("limits key_drop: %+v, want 1/1h per key, key_drop", q)
			}
			var ids []hopper.ID
			for range 3 {
				ids = append(ids, e.enqueue(`{"kind":"ok","queue":"mail","key":"tenant=42"}`))
			}
			if got := e.run(); got.ID != ids[0] {
				t.Fatalf("run: job %d, want tenant=42's first %d", got.ID, ids[0])
			}
			if _, ok, err := e.c.ProcessNext(t.Context(), time.Now()); ok || err != nil {
				t.Fatalf("ProcessNext past the key's rate: %v, %v; want its excess dropped, nothing run", ok, err)
			}
			for _, id := range ids[1:] {
				if j := e.job(id); j.State != hopper.StateCancelled || j.LastError != "dropped: key tenant=42 of queue mail over its rate 1/1h" {
					t.Errorf("a dropped job: %s, %q", j.State, j.LastError)
				}
			}
			var qs struct{ Queues []statsview.Queue }
			e.do("GET", "/api/v1/queues", "").ok(200, &qs)
			if len(qs.Queues) != 1 || !qs.Queues[0].KeyDrop || qs.Queues[0].Counts["cancelled"] != 2 {
				t.Errorf("GET /queues: %+v, want mail with key_drop and 2 cancelled", qs)
			}
			e.do("POST", "/api/v1/queues/mail/limits", `{"key_drop":true}`).fails(400, CodeInvalid, "key_rate")
			e.do("POST", "/api/v1/queues/mail/limits", `{"key_rate":"1/1s","key_drop":"yes"}`).fails(400, CodeInvalid, "key_drop")
			e.do("POST", "/api/v1/queues/mail/limits", `{"key_rate":"1/1h"}`).ok(200, &q)
			if q.KeyDrop {
				t.Errorf("limits key_rate without key_drop: %+v, want the excess held", q)
			}
			held := e.enqueue(`{"kind":"ok","queue":"mail","key":"tenant=42"}`)
			if _, ok, err := e.c.ProcessNext(t.Context(), time.Now()); ok || err != nil {
				t.Fatalf("ProcessNext with the excess held: %v, %v; want nothing", ok, err)
			}
			if j := e.job(held); j.State != hopper.StateAvailable {
				t.Errorf("a held key's job: %s, want available", j.State)
			}
		})
	}
}
