package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
)

// Tokens of the worker-protocol tests.
const (
	workerToken  = "worker-worker-worker-worker"
	emailsToken  = "emails-emails-emails-emails"
	otherWorkers = "other-other-other-other-other"
)

// workerTokens are tokens() plus a worker token, a worker token limited
// to the queue "emails", and a second worker token.
func workerTokens(t *testing.T) *httpauth.Auth {
	t.Helper()
	auth := &httpauth.Auth{MaxFailures: -1, Logger: slog.New(slog.DiscardHandler)}
	if err := auth.ParseTokens("read:" + readToken + ",write:" + writeToken + ",admin:" + adminToken +
		",w=worker:" + workerToken + ",mail=worker/emails:" + emailsToken + ",w2=worker:" + otherWorkers); err != nil {
		t.Fatal(err)
	}
	return auth
}

// register registers a worker of the kind "remote" with e's token and
// returns its ID.
func (e *env) register(body string) string {
	e.t.Helper()
	if body == "" {
		body = `{"kinds":["remote"],"slots":4,"name":"test"}`
	}
	var w workerView
	e.do("POST", "/api/v1/workers", body).ok(http.StatusCreated, &w)
	return w.ID
}

// fetchOne enqueues a job of the kind remote and fetches it as worker id,
// returning its lease.
func (e *env) fetchOne(id string) hopper.Lease {
	e.t.Helper()
	e.c.Enqueue(context.Background(), "remote", nil, nil)
	var res hopper.FetchResult
	e.do("POST", "/api/v1/workers/"+id+"/fetch", `{"max":1,"wait":"5s"}`).ok(http.StatusOK, &res)
	if len(res.Leases) != 1 {
		e.t.Fatalf("fetch: %d leases, want 1", len(res.Leases))
	}
	return res.Leases[0]
}

func TestWorkerProtocol(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: st})
			id := e.register("")
			if !strings.HasPrefix(id, "remote:") {
				t.Fatalf("worker ID %q", id)
			}
			// A fetch with nothing ready answers when the wait ends, empty.
			var res hopper.FetchResult
			e.do("POST", "/api/v1/workers/"+id+"/fetch", `{"max":2,"wait":0}`).ok(http.StatusOK, &res)
			if len(res.Leases) != 0 {
				t.Fatalf("fetched %d jobs from an empty store", len(res.Leases))
			}
			l := e.fetchOne(id)
			if l.Job.State != hopper.StateRunning || l.Job.Worker != id || l.Job.Attempt != 1 {
				t.Fatalf("leased job: %+v", l.Job)
			}
			// Heartbeat renews it.
			var hb hopper.HeartbeatResult
			e.do("POST", "/api/v1/workers/"+id+"/heartbeat", `{"tokens":["`+l.Token+`"]}`).ok(http.StatusOK, &hb)
			if len(hb.Lost) != 0 || len(hb.Cancel) != 0 {
				t.Fatalf("heartbeat: %+v", hb)
			}
			// A forged token (another MAC) is refused and changes nothing.
			forged := l.Token[:strings.LastIndexByte(l.Token, '.')+1] + "AAAAAAAAAAAAAAAAAAAAAA"
			e.do("POST", "/api/v1/workers/"+id+"/complete", `{"token":"`+forged+`","result":1}`).fails(http.StatusConflict, CodeConflict, "token")
			if j := e.job(l.Job.ID); j.State != hopper.StateRunning {
				t.Fatalf("after a forged completion the job is %s", j.State)
			}
			// The worker completes it; a second completion is stale: 409.
			var fin finishedView
			e.do("POST", "/api/v1/workers/"+id+"/complete", `{"token":"`+l.Token+`","result":{"sent":true}}`).ok(http.StatusOK, &fin)
			if len(fin.Jobs) != 1 || fin.Jobs[0].State != hopper.StateCompleted {
				t.Fatalf("complete: %+v", fin)
			}
			e.do("POST", "/api/v1/workers/"+id+"/complete", `{"token":"`+l.Token+`","result":2}`).fails(http.StatusConflict, CodeConflict, "token")
			if j := e.job(l.Job.ID); string(j.Result) != `{"sent":true}` {
				t.Fatalf("result %s", j.Result)
			}
			// Fail with retry_after: retrying at that time.
			l = e.fetchOne(id)
			before := time.Now()
			e.do("POST", "/api/v1/workers/"+id+"/fail", `{"token":"`+l.Token+`","error":"smtp down","retry_after":"1h"}`).ok(http.StatusOK, &fin)
			j := e.job(l.Job.ID)
			if fin.Jobs[0].State != hopper.StateRetrying || j.LastError != "smtp down" || j.RunAt.Before(before.Add(59*time.Minute)) {
				t.Fatalf("fail: %+v; job %s run at %v, error %q", fin, j.State, j.RunAt, j.LastError)
			}
			// Permanent: dead.
			l = e.fetchOne(id)
			e.do("POST", "/api/v1/workers/"+id+"/fail", `{"token":"`+l.Token+`","error":"bad address","permanent":true}`).ok(http.StatusOK, &fin)
			if fin.Jobs[0].State != hopper.StateDead {
				t.Fatalf("permanent fail: %+v", fin)
			}
			// A cancel is delivered by the next heartbeat; the failure then
			// ends it cancelled.
			l = e.fetchOne(id)
			if _, err := e.c.Cancel(context.Background(), l.Job.ID); err != nil {
				t.Fatal(err)
			}
			e.do("POST", "/api/v1/workers/"+id+"/heartbeat", `{"tokens":["`+l.Token+`"]}`).ok(http.StatusOK, &hb)
			if len(hb.Cancel) != 1 || hb.Cancel[0] != l.Job.ID {
				t.Fatalf("heartbeat after cancel: %+v", hb)
			}
			e.do("POST", "/api/v1/workers/"+id+"/fail", `{"token":"`+l.Token+`","error":"cancelled"}`).ok(http.StatusOK, &fin)
			if fin.Jobs[0].State != hopper.StateCancelled {
				t.Fatalf("fail after cancel: %+v", fin)
			}
			// Batches: all or none.
			l1, l2 := e.fetchOne(id), e.fetchOne(id)
			e.do("POST", "/api/v1/workers/"+id+"/complete/batch", `{"completions":[{"token":"`+l1.Token+`"},{"token":"`+forged+`"}]}`).fails(http.StatusConflict, CodeConflict, "token")
			if e.job(l1.Job.ID).State != hopper.StateRunning {
				t.Fatal("a refused batch changed a job")
			}
			e.do("POST", "/api/v1/workers/"+id+"/complete/batch", `{"completions":[{"token":"`+l1.Token+`"},{"token":"`+l2.Token+`"}]}`).ok(http.StatusOK, &fin)
			if len(fin.Jobs) != 2 {
				t.Fatalf("batch: %+v", fin)
			}
			// The worker is listed among the servers, remote.
			var svs serversView
			e.do("GET", "/api/v1/servers", "").ok(http.StatusOK, &svs)
			found := false
			for _, s := range svs.Servers {
				found = found || s.ID == id && s.Remote && s.Alive && s.Workers == 4
			}
			if !found {
				t.Fatalf("worker %s not among the servers: %+v", id, svs.Servers)
			}
			// Quiet: the fetch answers at once, with none.
			e.do("POST", "/api/v1/workers/"+id+"/quiet", "").ok(http.StatusOK, nil)
			e.c.Enqueue(context.Background(), "remote", nil, nil)
			e.do("POST", "/api/v1/workers/"+id+"/fetch", `{"max":1,"wait":"30s"}`).ok(http.StatusOK, &res)
			if len(res.Leases) != 0 || !res.Quiet || res.Stop {
				t.Fatalf("fetch of a quiet worker: %+v", res)
			}
			e.do("DELETE", "/api/v1/workers/"+id, "")
			e.do("POST", "/api/v1/workers/"+id+"/fetch", `{"max":1}`).fails(http.StatusNotFound, CodeNotFound, "")
		})
	}
}

// TestWorkerLongPollWakes: a fetch waiting for work answers when a job is
// enqueued, long before its wait ends.
func TestWorkerLongPollWakes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	id := e.register("")
	done := make(chan hopper.FetchResult)
	go func() {
		var res hopper.FetchResult
		r := e.do("POST", "/api/v1/workers/"+id+"/fetch", `{"max":1,"wait":"30s"}`)
		_ = json.Unmarshal(r.body, &res)
		done <- res
	}()
	// Enqueue until the fetch has answered: the first enqueue may come
	// before the fetch waits, which then claims it at once.
	for {
		if _, err := e.c.Enqueue(context.Background(), "remote", nil, nil); err != nil {
			t.Fatal(err)
		}
		select {
		case res := <-done:
			if len(res.Leases) != 1 {
				t.Fatalf("woken fetch: %+v", res)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestWorkerScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{auth: workerTokens(t)})
	// A worker token registers and works; it may not read or enqueue.
	e.token = workerToken
	id := e.register("")
	e.do("GET", "/api/v1/jobs", "").fails(http.StatusForbidden, CodeForbidden, "")
	e.do("POST", "/api/v1/jobs", `{"kind":"remote"}`).fails(http.StatusForbidden, CodeForbidden, "")
	e.do("POST", "/api/v1/workers/"+id+"/quiet", "").fails(http.StatusForbidden, CodeForbidden, "")
	// Read and write tokens may not work jobs; admin may.
	for _, tok := range []string{readToken, writeToken} {
		e.doAs(tok, "POST", "/api/v1/workers", `{"kinds":["remote"],"slots":1}`).fails(http.StatusForbidden, CodeForbidden, "")
	}
	e.doAs(adminToken, "POST", "/api/v1/workers", `{"kinds":["remote"],"slots":1}`).ok(http.StatusCreated, nil)
	// Another worker token cannot act as this worker.
	e.doAs(otherWorkers, "POST", "/api/v1/workers/"+id+"/fetch", `{"max":1}`).fails(http.StatusNotFound, CodeNotFound, "")
	// A token limited to "emails" registers for emails only, by default
	// too, and never fetches another queue's job.
	e.token = emailsToken
	e.do("POST", "/api/v1/workers", `{"kinds":["remote"],"slots":1,"queues":["billing"]}`).fails(http.StatusForbidden, CodeForbidden, "queues[0]")
	var w workerView
	e.do("POST", "/api/v1/workers", `{"kinds":["remote"],"slots":1}`).ok(http.StatusCreated, &w)
	if len(w.Queues) != 1 || w.Queues[0] != "emails" {
		t.Fatalf("queues of a worker of the emails token: %v", w.Queues)
	}
	e.c.Enqueue(context.Background(), "remote", nil, &hopper.EnqueueOptions{Queue: "billing"})
	var res hopper.FetchResult
	e.do("POST", "/api/v1/workers/"+w.ID+"/fetch", `{"max":1}`).ok(http.StatusOK, &res)
	if len(res.Leases) != 0 {
		t.Fatalf("the emails worker fetched %s", res.Leases[0].Job.Queue)
	}
	e.c.Enqueue(context.Background(), "remote", nil, &hopper.EnqueueOptions{Queue: "emails"})
	e.do("POST", "/api/v1/workers/"+w.ID+"/fetch", `{"max":1}`).ok(http.StatusOK, &res)
	if len(res.Leases) != 1 || res.Leases[0].Job.Queue != "emails" {
		t.Fatalf("the emails worker fetched %+v", res.Leases)
	}
	// A worker token cannot sign in to the dashboard.
	if _, err := workerTokens(t).NewSession(httptest.NewRequest("POST", "/", nil), workerToken); err == nil {
		t.Fatal("a worker token signed in")
	}
}

// TestWorkerKinds: a worker may register neither a kind the server runs
// itself nor, when the server lists its external kinds, another.
func TestWorkerKinds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.do("POST", "/api/v1/workers", `{"kinds":["ok"],"slots":1}`).fails(http.StatusBadRequest, CodeInvalid, "kinds[0]", "runs itself")
	e.do("POST", "/api/v1/workers", `{"kinds":["remote","mail"],"slots":1}`).fails(http.StatusBadRequest, CodeInvalid, "kinds[1]", "external kinds")
	e.do("POST", "/api/v1/workers", `{"kinds":[],"slots":1}`).fails(http.StatusBadRequest, CodeInvalid, "kinds")
	e.do("POST", "/api/v1/workers", `{"kinds":["remote"],"slots":0}`).fails(http.StatusBadRequest, CodeInvalid, "slots")
	id := e.register("")
	e.do("POST", "/api/v1/workers/"+id+"/fetch", `{"max":5}`).fails(http.StatusBadRequest, CodeInvalid, "max")
	e.do("POST", "/api/v1/workers/"+id+"/fetch", `{"max":1,"wait":"31s"}`).fails(http.StatusBadRequest, CodeInvalid, "wait")
	e.do("POST", "/api/v1/workers/"+id+"/complete", `{"token":"nonsense"}`).fails(http.StatusBadRequest, CodeInvalid, "token")
}

// TestLongPollBound: beyond Remote.MaxLongPolls waiting fetches, a fetch
// that would wait is refused with 429 and Retry-After.
func TestLongPollBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{cfg: func(c *hopper.Config) { c.Remote.MaxLongPolls = 1 }})
	id := e.register("")
	waiting := make(chan response, 1)
	go func() { waiting <- e.do("POST", "/api/v1/workers/"+id+"/fetch", `{"max":1,"wait":"30s"}`) }()
	refused := func(r response) bool {
		if r.status != http.StatusTooManyRequests {
			return false
		}
		r.fails(http.StatusTooManyRequests, CodeTooManyRequests, "", "long polls")
		if r.header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
		return true
	}
	for {
		select {
		case r := <-waiting: // this one came second
			if !refused(r) {
				t.Fatalf("the 30s fetch answered %d without a job", r.status)
			}
			return
		default:
		}
		if refused(e.do("POST", "/api/v1/workers/"+id+"/fetch", `{"max":1,"wait":0.05}`)) {
			break
		}
	}
	e.c.Enqueue(context.Background(), "remote", nil, nil)
	if r := <-waiting; r.status != http.StatusOK {
		t.Fatalf("the waiting fetch: %d %s", r.status, r.body)
	}
}
