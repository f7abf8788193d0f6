package httpapi

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/statsview"
)

// TestQueueKeys: the enqueue body's key is kept and shown; the limits
// route sets a limit per key, which holds the key's second job and says
// why; ?key= pauses and resumes one key of a queue; bad input is refused
// naming its field. On every store.
func TestQueueKeys(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: st})
			var q statsview.Queue
			e.do("POST", "/api/v1/queues/api/limits", `{"key_concurrency":1}`).ok(200, &q)
			if q.KeyConcurrency != 1 || q.Concurrency != 0 {
				t.Errorf("limits: %+v, want key_concurrency 1", q)
			}
			first := e.enqueue(`{"kind":"block","queue":"api","key":"tenant=42"}`)
			done := make(chan *hopper.Job, 1)
			go func() { // the first runs, holding the key's slot
				j, _, _ := e.c.ProcessNext(context.Background(), time.Now())
				done <- j
			}()
			<-e.started
			second := e.enqueue(`{"kind":"ok","queue":"api","key":"tenant=42"}`)
			var j struct {
				Key        string `json:"key"`
				State      string `json:"state"`
				WaitReason string `json:"wait_reason"`
			}
			e.do("GET", "/api/v1/jobs/"+strconv.FormatInt(int64(first), 10), "").ok(200, &j)
			if j.Key != "tenant=42" {
				t.Errorf("GET the job: key %q, want tenant=42", j.Key)
			}
			e.do("GET", "/api/v1/jobs/"+strconv.FormatInt(int64(second), 10), "").ok(200, &j)
			if j.State != "available" || j.WaitReason != "key tenant=42 at its limit of 1" {
				t.Errorf("GET the held job: %+v, want available, key tenant=42 at its limit of 1", j)
			}
			var k statsview.Key
			e.do("POST", "/api/v1/queues/api/pause?key=tenant%3D7", "").ok(200, &k)
			if !k.Paused || k.Key != "tenant=7" || k.Queue != "api" || k.PausedAt == nil {
				t.Errorf("pause ?key=: %+v, want tenant=7 paused", k)
			}
			held := e.enqueue(`{"kind":"ok","queue":"api","key":"tenant=7"}`)
			e.do("GET", "/api/v1/jobs/"+strconv.FormatInt(int64(held), 10), "").ok(200, &j)
			if j.WaitReason != "key tenant=7 paused" {
				t.Errorf("GET the paused key's job: wait_reason %q", j.WaitReason)
			}
			e.do("POST", "/api/v1/queues/api/resume?key=tenant%3D7", "").ok(200, &k)
			if k.Paused {
				t.Errorf("resume ?key=: %+v, want active", k)
			}
			e.do("POST", "/api/v1/queues/api/limits", `{"key_concurrency":-1}`).fails(400, CodeInvalid, "key_concurrency")
			e.do("POST", "/api/v1/queues/api/limits", `{"concurrency":3,"key_concurrency":-1}`).fails(400, CodeInvalid, "key_concurrency")
			e.do("POST", "/api/v1/queues/api/pause?key=", "").fails(400, CodeInvalid, "key")
			e.do("POST", "/api/v1/jobs", `{"kind":"ok","key":""}`).fails(400, CodeInvalid, "key")
			e.do("POST", "/api/v1/queues/api/limits", `{"key_concurrency":0}`).ok(200, &q)
			if q.KeyConcurrency != 0 || q.Concurrency != 0 {
				t.Errorf("limits 0: %+v, want no limit (and the refused concurrency 3 not set)", q)
			}
			close(e.release)
			if j := <-done; j == nil || j.ID != first {
				t.Errorf("the blocking job: %+v, want %d", j, first)
			}
			if got := e.run(); got.ID != second {
				t.Errorf("run after the first finished: job %d, want %d", got.ID, second)
			}
		})
	}
}
