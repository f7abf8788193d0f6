package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/dashtest"
)

// TestQueuesPage: the queues page lists each queue with its counts; Pause
// holds a queue's jobs (the job's page says why it waits), Resume lets
// them run; a read token sees no buttons and may not pause.
func TestQueuesPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	ctx := context.Background()
	id := e.enqueue("ok", &hopper.EnqueueOptions{Queue: "mail"})
	e.enqueue("ok", &hopper.EnqueueOptions{Queue: "other"})
	page := e.get("/queues", "").want(t, 200).body
	for _, want := range []string{`data-queue="mail"`, `data-queue="other"`, `action="/queues/mail/pause"`, `data-action="pause"`} {
		if !strings.Contains(page, want) {
			t.Errorf("queues page: no %s", want)
		}
	}
	r := e.post("/queues/mail/pause", "", url.Values{}).want(t, http.StatusSeeOther)
	if r.Header.Get("Location") != "/queues" {
		t.Errorf("pause: to %q", r.Header.Get("Location"))
	}
	e.run()
	if st := e.job(id).State; st != hopper.StateAvailable {
		t.Fatalf("the paused queue's job is %s after a run, want available", st)
	}
	page = e.get("/queues", "").want(t, 200).body
	if !strings.Contains(page, "st-paused") || !strings.Contains(page, `data-action="resume"`) || !strings.Contains(page, "&amp;state=available") {
		t.Errorf("queues page after the pause: no paused badge, resume button or held link")
	}
	if jp := e.get("/jobs/"+strconv.FormatInt(int64(id), 10), "").want(t, 200).body; !strings.Contains(jp, `id="wait-reason">queue mail paused`) {
		t.Errorf("the held job's page does not say it is held by the pause")
	}
	e.post("/queues/mail/resume", "", url.Values{}).want(t, http.StatusSeeOther)
	qs, err := e.c.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Paused {
			t.Errorf("queue %s still paused after the resume", q.Name)
		}
	}
	e.run()
	if st := e.job(id).State; st != hopper.StateCompleted {
		t.Errorf("the job is %s after the resume and a run, want completed", st)
	}
	// A limit shows, with the queue at it.
	if err := e.c.SetQueueConcurrency(ctx, "other", 1); err != nil {
		t.Fatal(err)
	}
	if page := e.get("/queues", "").want(t, 200).body; !strings.Contains(page, "0 of 1 running") {
		t.Errorf("queues page: no limit shown for other")
	}
	if jp := e.get("/jobs/"+strconv.FormatInt(int64(id), 10), "").body; strings.Contains(jp, `id="wait-reason"`) {
		t.Errorf("a finished job's page shows a wait reason")
	}
	// A limit per key shows; a paused key's job says why it waits and
	// shows its key.
	if err := e.c.SetQueueKeyConcurrency(ctx, "api", 2); err != nil {
		t.Fatal(err)
	}
	if page := e.get("/queues", "").want(t, 200).body; !strings.Contains(page, "2 per key") {
		t.Errorf("queues page: no limit per key shown for api")
	}
	if err := e.c.PauseKey(ctx, "api", "tenant=42"); err != nil {
		t.Fatal(err)
	}
	kid := e.enqueue("ok", &hopper.EnqueueOptions{Queue: "api", Key: "tenant=42"})
	jp := e.get("/jobs/"+strconv.FormatInt(int64(kid), 10), "").want(t, 200).body
	if !strings.Contains(jp, `id="wait-reason">key tenant=42 paused`) || !strings.Contains(jp, `id="flow-key">tenant=42`) {
		t.Errorf("the paused key's job page does not show its key and why it waits")
	}
}

// TestQueuesPageScopes: a read token sees the queues page without buttons
// and may not pause; a write token may; no token is sent to sign in.
func TestQueuesPageScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Auth: dashtest.Tokens(t)})
	e.enqueue("ok", &hopper.EnqueueOptions{Queue: "mail"})
	if body := e.get("/queues", dashtest.ReadToken).want(t, 200).body; strings.Contains(body, "data-action=") {
		t.Errorf("read token: the queues page shows a button")
	}
	e.post("/queues/mail/pause", dashtest.ReadToken, url.Values{}).want(t, http.StatusForbidden)
	e.post("/queues/mail/pause", "", url.Values{}).want(t, http.StatusUnauthorized)
	e.post("/queues/mail/pause", dashtest.WriteToken, url.Values{}).want(t, http.StatusSeeOther)
	if body := e.get("/queues", dashtest.WriteToken).want(t, 200).body; !strings.Contains(body, `data-action="resume"`) {
		t.Errorf("write token: no resume button on a paused queue")
	}
	// A cross-site post is refused.
	e.do(http.MethodPost, "/queues/mail/resume", dashtest.WriteToken, url.Values{}, http.Header{"Sec-Fetch-Site": {"cross-site"}}).want(t, http.StatusForbidden)
}

// TestQueuesPageRate: the queues page shows a queue's rate and that it is
// throttled; a job it holds says until when on its page.
func TestQueuesPageRate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	if err := e.c.SetQueueRate(context.Background(), "api", hopper.Rate{N: 1, Period: time.Hour, Burst: 1, Drop: false}); err != nil {
		t.Fatal(err)
	}
	e.enqueue("ok", &hopper.EnqueueOptions{Queue: "api"})
	held := e.enqueue("ok", &hopper.EnqueueOptions{Queue: "api"})
	e.run()
	page := e.get("/queues", "").want(t, 200).body
	for _, want := range []string{`1/1h starts`, `>throttled</span>`, `title="queue api throttled until `} {
		if !strings.Contains(page, want) {
			t.Errorf("queues page: no %s", want)
		}
	}
	if jp := e.get("/jobs/"+strconv.FormatInt(int64(held), 10), "").want(t, 200).body; !strings.Contains(jp, `id="wait-reason">queue api throttled until `) {
		t.Errorf("the throttled job's page does not say until when it waits")
	}
}

// TestQueuesPageKeyRate: the queues page shows a queue's rate per key and
// counts the jobs its keys hold ("1 by keys"); a job its key's throttle
// holds says until when on its page.
func TestQueuesPageKeyRate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	if err := e.c.SetQueueKeyRate(context.Background(), "api", hopper.Rate{N: 1, Period: time.Hour, Burst: 2}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		e.enqueue("ok", &hopper.EnqueueOptions{Queue: "api", Key: "tenant=42"})
	}
	held := e.enqueue("ok", &hopper.EnqueueOptions{Queue: "api", Key: "tenant=42"})
	e.run()
	e.run()
	page := e.get("/queues", "").want(t, 200).body
	if want := `<span class="key-rate">1/1h starts per key</span> <span class="muted">burst 2</span>`; !strings.Contains(page, want) {
		t.Errorf("queues page: no %s", want)
	}
	if want := `title="ready jobs that their keys hold back: a key paused, held, at its limit or throttled">1 by keys</a>`; !strings.Contains(page, want) {
		t.Errorf("queues page: the job its key's throttle holds is not counted (no %s)", want)
	}
	if jp := e.get("/jobs/"+strconv.FormatInt(int64(held), 10), "").want(t, 200).body; !strings.Contains(jp, `id="wait-reason">key tenant=42 throttled until `) {
		t.Errorf("the throttled key's job's page does not say until when it waits")
	}
	if strings.Contains(page, "excess dropped") {
		t.Errorf("queues page: a rate per key that holds its excess is shown as dropping it")
	}
	if err := e.c.SetQueueKeyRate(context.Background(), "api", hopper.Rate{N: 1, Period: time.Hour, Drop: true}); err != nil {
		t.Fatal(err)
	}
	page = e.get("/queues", "").want(t, 200).body
	if want := `<span class="key-rate">1/1h starts per key</span> <span class="muted">a key's excess dropped</span>`; !strings.Contains(page, want) {
		t.Errorf("queues page with key_drop: no %s", want)
	}
}
