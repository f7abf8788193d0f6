package dashboard

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/dashtest"
	"github.com/hopperq/hopper/job"
)

// gatedEnv is a dashboard on a client of g holding dashtest.BulkJobs jobs
// scheduled in queue "bulk", and one in queue "other", whose ID it
// returns.
func gatedEnv(t *testing.T, g *dashtest.GatedStore) (*env, hopper.ID) {
	t.Helper()
	c, err := hopper.NewClient(hopper.Config{Store: g, Workers: dashtest.Kinds(), Logger: dashtest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	e := newEnvOn(t, c, Options{})
	reqs := make([]hopper.EnqueueRequest, dashtest.BulkJobs)
	for i := range reqs {
		reqs[i] = hopper.EnqueueRequest{Kind: "ok", Options: &hopper.EnqueueOptions{Queue: "bulk", Delay: time.Hour}}
	}
	if _, err := c.EnqueueMany(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
	return e, e.enqueue("ok", &hopper.EnqueueOptions{Queue: "other", Delay: time.Hour})
}

// confirmedCancel returns the form of "cancel every job of queue bulk",
// confirmed on its confirmation page.
func confirmedCancel(t *testing.T, e *env) url.Values {
	t.Helper()
	form := url.Values{"action": {"cancel"}, "all": {"1"}, "queue": {"bulk"}, "back": {"/jobs?queue=bulk"}}
	confirm := e.post("/bulk", "", form).want(t, http.StatusOK).body
	form.Set("upto", regexpValue(confirm, "upto"))
	form.Set("confirm", "1")
	return form
}

// postCtx posts form as a same-origin browser would, with the request's
// context ctx.
func (e *env) postCtx(ctx context.Context, target string, form url.Values) response {
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	res := w.Result()
	b, _ := io.ReadAll(res.Body)
	return response{Response: res, body: string(b)}
}

// count returns how many jobs of queue are in state st.
func (e *env) count(queue string, st hopper.State) int {
	e.t.Helper()
	n, err := e.c.Count(context.Background(), hopper.ListOptions{Queue: queue, States: []hopper.State{st}})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestBulkOutlivesRequest: a bulk action whose request is cancelled
// (the browser went away) right after the action started still cancels
// every job it selected.
func TestBulkOutlivesRequest(t *testing.T) {
	t.Parallel()
	g := dashtest.NewGatedStore(1)
	e, _ := gatedEnv(t, g)
	sub := e.c.Subscribe(job.EventCancelled)
	defer sub.Unsubscribe()
	form := confirmedCancel(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	answered := make(chan response, 1)
	go func() { answered <- e.postCtx(ctx, "/bulk", form) }()
	dashtest.Within(t, g.Entered, "the action to start")
	cancel() // the client goes away while the first batch runs
	close(g.Release)
	dashtest.Within(t, answered, "the request to end")
	task := e.h.bulks.last()
	dashtest.Within(t, task.done, "the action to end")
	cancelled := 0
	for cancelled < dashtest.BulkJobs {
		select {
		case <-sub.C:
			cancelled++
		default:
			t.Fatalf("%d jobs cancelled, want %d: %s", cancelled, dashtest.BulkJobs, task.snapshot().Message)
		}
	}
	if n := e.count("bulk", hopper.StateCancelled); n != dashtest.BulkJobs {
		t.Errorf("%d jobs of the queue cancelled, want %d", n, dashtest.BulkJobs)
	}
	if n := e.count("other", hopper.StateScheduled); n != 1 {
		t.Errorf("the job of another queue: %d scheduled, want 1", n)
	}
}

// TestBulkProgressPage: a long bulk action sends the browser to its
// progress page, which shows how far it got while it runs (and reloads
// itself), a banner on the other pages, and what it did once it ends; a
// second action is refused meanwhile.
func TestBulkProgressPage(t *testing.T) {
	t.Parallel()
	g := dashtest.NewGatedStore(2) // the second batch waits
	e, other := gatedEnv(t, g)
	e.h.bulkInline = 0
	form := confirmedCancel(t, e)
	if r := e.post("/bulk", "", form).want(t, http.StatusSeeOther); r.Header.Get("Location") != "/bulk" {
		t.Fatalf("a long action: to %q, want its progress page", r.Header.Get("Location"))
	}
	dashtest.Within(t, g.Entered, "the second batch")
	page := e.get("/bulk", "").want(t, http.StatusOK).body
	for _, want := range []string{`data-state="running"`, `Cancel all jobs in queue &#34;bulk&#34;`,
		`<progress id="bulk-progress" max="2500" value="1000">`, "1,000 of 2,500 jobs done (40%)",
		`<meta http-equiv="refresh" content="2">`, "does not stop it", "the jobs done so far stay done"} {
		if !strings.Contains(page, want) {
			t.Errorf("progress page while running: no %q in\n%s", want, clip(page))
		}
	}
	if list := e.get("/jobs", "").body; !strings.Contains(list, `id="bulk-banner"`) || !strings.Contains(list, "1,000 of 2,500 done") {
		t.Errorf("jobs page while the action runs: no banner")
	}
	second := url.Values{"action": {"cancel"}, "ids": {strconv.FormatInt(int64(other), 10)}, "confirm": {"1"}}
	if r := e.post("/bulk", "", second).want(t, http.StatusSeeOther); r.Header.Get("Location") != "/bulk" ||
		!strings.Contains(cookies(r), "Another+bulk+action+is+running") {
		t.Errorf("a second action while one runs: to %q, %q", r.Header.Get("Location"), cookies(r))
	}
	if st := e.job(other).State; st != hopper.StateScheduled {
		t.Errorf("the refused action ran: job %d is %s", other, st)
	}

	close(g.Release)
	dashtest.Within(t, e.h.bulks.last().done, "the action to end")
	page = e.get("/bulk", "").want(t, http.StatusOK).body
	for _, want := range []string{`data-state="done"`, "Cancelled 2,500 of 2,500 jobs.", "2,500 of 2,500 jobs done (100%)"} {
		if !strings.Contains(page, want) {
			t.Errorf("progress page once done: no %q in\n%s", want, clip(page))
		}
	}
	if strings.Contains(page, `http-equiv="refresh"`) {
		t.Errorf("progress page once done: still reloads itself")
	}
	if strings.Contains(e.get("/jobs", "").body, `id="bulk-banner"`) {
		t.Errorf("jobs page once done: still a banner")
	}
	if n := e.count("bulk", hopper.StateCancelled); n != dashtest.BulkJobs {
		t.Errorf("%d jobs cancelled, want %d", n, dashtest.BulkJobs)
	}
}

// TestBulkCloseStops: Close stops a running bulk action between its
// batches: the batches done stay done, the other jobs are untouched, and
// the page says so. Actions are refused after Close.
func TestBulkCloseStops(t *testing.T) {
	t.Parallel()
	g := dashtest.NewGatedStore(2)
	e, other := gatedEnv(t, g)
	e.h.bulkInline = 0
	e.post("/bulk", "", confirmedCancel(t, e)).want(t, http.StatusSeeOther)
	dashtest.Within(t, g.Entered, "the second batch")
	e.h.Close()
	task := e.h.bulks.last()
	dashtest.Within(t, task.done, "the action to end") // Close waited for it
	if n := e.count("bulk", hopper.StateCancelled); n != hopper.BulkBatch {
		t.Errorf("%d jobs cancelled, want the first batch, %d", n, hopper.BulkBatch)
	}
	if n := e.count("bulk", hopper.StateScheduled); n != dashtest.BulkJobs-hopper.BulkBatch {
		t.Errorf("%d jobs still scheduled, want %d", n, dashtest.BulkJobs-hopper.BulkBatch)
	}
	page := e.get("/bulk", "").want(t, http.StatusOK).body
	for _, want := range []string{`data-state="stopped"`, "Cancel stopped after 1,000 of 2,500 jobs: the server is stopping."} {
		if !strings.Contains(page, want) {
			t.Errorf("progress page after Close: no %q in\n%s", want, clip(page))
		}
	}
	r := e.post("/bulk", "", url.Values{"action": {"cancel"}, "ids": {strconv.FormatInt(int64(other), 10)}, "confirm": {"1"}}).want(t, http.StatusSeeOther)
	if !strings.Contains(cookies(r), "server+is+stopping") || e.job(other).State != hopper.StateScheduled {
		t.Errorf("an action after Close: %q, job %d %s", cookies(r), other, e.job(other).State)
	}
}
