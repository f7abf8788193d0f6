package dashboard

import (
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/dashtest"
)

// TestRetryRunsCommandScope (docs/security.md, decision 91): retrying a
// dead exec job runs its command again, so it needs the exec scope, as
// running an exec schedule now does: a write token sees no Retry button
// for it, is refused (403) on the job's retry and on a bulk retry naming
// it, with nothing retried, and its "retry every job matching" leaves it
// dead (the confirmation says so).
func TestRetryRunsCommandScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Auth: dashtest.Tokens(t)})
	execID, failID := e.enqueue("exec", nil), e.enqueue("fail", nil)
	e.run()
	path := func(id hopper.ID) string { return "/jobs/" + strconv.FormatInt(int64(id), 10) }
	if e.job(execID).State != hopper.StateDead || e.job(failID).State != hopper.StateDead {
		t.Fatal("the jobs did not die")
	}
	if page := e.get(path(execID), dashtest.WriteToken).want(t, 200).body; strings.Contains(page, `id="retry"`) {
		t.Error("a write token is shown Retry on a dead exec job")
	}
	if page := e.get(path(failID), dashtest.WriteToken).want(t, 200).body; !strings.Contains(page, `id="retry"`) {
		t.Error("a write token is not shown Retry on a dead job of another kind")
	}
	if page := e.get(path(execID), dashtest.ExecToken).want(t, 200).body; !strings.Contains(page, `id="retry"`) {
		t.Error("an exec token is not shown Retry on a dead exec job")
	}
	r := e.post(path(execID)+"/retry", dashtest.WriteToken, url.Values{}).want(t, http.StatusForbidden)
	if !strings.Contains(r.body, "exec or admin token") {
		t.Errorf("refused retry: %s", clip(r.body))
	}
	ids := strconv.FormatInt(int64(execID), 10) + "," + strconv.FormatInt(int64(failID), 10)
	e.post("/bulk", dashtest.WriteToken, url.Values{"action": {"retry"}, "ids": {ids}, "confirm": {"1"}}).want(t, http.StatusForbidden)
	if e.job(execID).State != hopper.StateDead || e.job(failID).State != hopper.StateDead {
		t.Fatal("a refused retry retried a job")
	}
	form := url.Values{"action": {"retry"}, "all": {"1"}, "state": {"dead"}, "back": {"/dlq"}}
	confirm := e.post("/bulk", dashtest.WriteToken, form).want(t, http.StatusOK).body
	if !strings.Contains(confirm, "Exec jobs and notifications stay dead") {
		t.Errorf("the confirmation does not say exec jobs stay dead:\n%s", clip(confirm))
	}
	form.Set("upto", regexpValue(confirm, "upto"))
	form.Set("confirm", "1")
	e.post("/bulk", dashtest.WriteToken, form).want(t, http.StatusSeeOther)
	if e.job(execID).State != hopper.StateDead || e.job(failID).State == hopper.StateDead {
		t.Fatalf("write token's retry of every dead job: exec job %s, other %s; want only the other retried", e.job(execID).State, e.job(failID).State)
	}
	e.post(path(execID)+"/retry", dashtest.ExecToken, url.Values{}).want(t, http.StatusSeeOther)
	if e.job(execID).State == hopper.StateDead {
		t.Fatal("an exec token's retry left the exec job dead")
	}
}

// TestCrossOriginEveryAction: every action the dashboard routes — the
// newest buttons (run now, queue pause and resume) as the oldest, read
// from routes' source so that a new button cannot be missed — refuses a
// cross-origin post with an admin token (CSRF), and changes nothing.
func TestCrossOriginEveryAction(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("dashboard.go")
	if err != nil {
		t.Fatal(err)
	}
	actions := regexp.MustCompile(`(?m)^\s*action\("([^"]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(actions) < 9 {
		t.Fatalf("%d actions found in dashboard.go, want every one", len(actions))
	}
	e := newEnv(t, Options{Auth: dashtest.Tokens(t)})
	id := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour, Queue: "q"})
	if _, err := e.c.AddSchedule(t.Context(), "s", hopper.ScheduleOptions{Every: time.Hour, Kind: "ok"}); err != nil {
		t.Fatal(err)
	}
	paths := []string{"/login", "/logout"}
	for _, a := range actions {
		paths = append(paths, strings.NewReplacer("{id}", strconv.FormatInt(int64(id), 10), "{name}", "s").Replace(a[1]))
	}
	paths = append(paths, "/queues/q/pause")
	form := url.Values{"action": {"cancel"}, "ids": {strconv.FormatInt(int64(id), 10)}, "confirm": {"1"}, "now": {"1"}}
	for _, p := range paths {
		for _, h := range []http.Header{{"Sec-Fetch-Site": {"cross-site"}}, {"Origin": {"https://evil.example"}}} {
			h.Set("Authorization", "Bearer "+dashtest.AdminToken)
			r := e.do(http.MethodPost, p, "", form, h).want(t, http.StatusForbidden)
			if !strings.Contains(r.body, "another site") {
				t.Errorf("cross-origin post to %s: %s", p, clip(r.body))
			}
		}
	}
	if j := e.job(id); j.State != hopper.StateScheduled || j.CancelRequested {
		t.Errorf("the job after cross-origin posts: %s", j.State)
	}
	if sc, _ := e.c.GetSchedule(t.Context(), "s"); sc.Paused || sc.LastJobID != 0 {
		t.Errorf("the schedule after cross-origin posts: paused %v, last job %d", sc.Paused, sc.LastJobID)
	}
	if qs, _ := e.c.Queues(t.Context()); len(qs) != 1 || qs[0].Paused {
		t.Errorf("the queues after cross-origin posts: %+v", qs)
	}
}
