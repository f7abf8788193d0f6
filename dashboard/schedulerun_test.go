package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/dashtest"
)

// TestRunSchedule: the schedules page's Run now button enqueues a manual
// run and shows its job; with overlap skip a second run while the first
// waits is refused unless "even if busy" is ticked.
func TestRunSchedule(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	ctx := context.Background()
	if _, err := e.c.AddSchedule(ctx, "report", hopper.ScheduleOptions{Cron: "30 9 * * 1-5", Kind: "ok", Options: &hopper.EnqueueOptions{Queue: "reports"}}); err != nil {
		t.Fatal(err)
	}
	if page := e.get("/schedules", "").want(t, 200).body; !strings.Contains(page, `action="/schedules/report/run"`) || !strings.Contains(page, `data-action="run"`) {
		t.Fatalf("schedules page lacks the Run now button")
	}
	r := e.post("/schedules/report/run", "", url.Values{}).want(t, http.StatusSeeOther)
	sc, err := e.c.GetSchedule(ctx, "report")
	if err != nil || sc.LastJobID == 0 {
		t.Fatalf("after run now: %+v, %v", sc, err)
	}
	if loc := r.Header.Get("Location"); loc != e.h.jobPath(sc.LastJobID) {
		t.Errorf("run now: to %q, want the job's page %q", loc, e.h.jobPath(sc.LastJobID))
	}
	j, err := e.c.Get(ctx, sc.LastJobID)
	if err != nil || !j.Manual() || j.Queue != "reports" {
		t.Fatalf("the run: %+v, %v", j, err)
	}
	if page := e.get(e.h.jobPath(j.ID), "").want(t, 200).body; !strings.Contains(page, "manual run") {
		t.Errorf("the job's page does not say it is a manual run")
	}
	r = e.post("/schedules/report/run", "", url.Values{})
	if c := cookies(r); !strings.Contains(c, "not+run") || !strings.Contains(c, "even+if+busy") {
		t.Errorf("second run while the first waits: flash %q, want a refusal", c)
	}
	e.post("/schedules/report/run", "", url.Values{"force": {"1"}}).want(t, http.StatusSeeOther)
	if sc2, _ := e.c.GetSchedule(ctx, "report"); sc2.LastJobID == sc.LastJobID {
		t.Errorf("forced run enqueued nothing")
	}
	if r := e.post("/schedules/nope/run", "", url.Values{}); !strings.Contains(cookies(r), "Not+found") {
		t.Errorf("running a missing schedule: %q", cookies(r))
	}
}

// TestRunScheduleExecScope: running an exec schedule needs exec scope.
func TestRunScheduleExecScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Auth: dashtest.Tokens(t)})
	ctx := context.Background()
	if _, err := e.c.AddSchedule(ctx, "x", hopper.ScheduleOptions{Every: hopper.MinScheduledTimeout, Kind: "exec"}); err != nil {
		t.Fatal(err)
	}
	e.post("/schedules/x/run", dashtest.ReadToken, url.Values{}).want(t, http.StatusForbidden)
	e.post("/schedules/x/run", dashtest.WriteToken, url.Values{}).want(t, http.StatusForbidden)
	if sc, _ := e.c.GetSchedule(ctx, "x"); sc.LastJobID != 0 {
		t.Fatalf("a refused run enqueued job %d", sc.LastJobID)
	}
	e.post("/schedules/x/run", dashtest.ExecToken, url.Values{}).want(t, http.StatusSeeOther)
	if sc, _ := e.c.GetSchedule(ctx, "x"); sc.LastJobID == 0 {
		t.Fatalf("exec token's run enqueued nothing")
	}
}

// TestRunScheduleBuffered: with overlap buffer-one a second Run now while
// the first run waits is buffered (the flash says so) and the schedules
// page shows the buffered run and the policy.
func TestRunScheduleBuffered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	ctx := context.Background()
	if _, err := e.c.AddSchedule(ctx, "b", hopper.ScheduleOptions{Every: hopper.MinScheduledTimeout, Kind: "ok", Overlap: hopper.OverlapBufferOne}); err != nil {
		t.Fatal(err)
	}
	e.post("/schedules/b/run", "", url.Values{}).want(t, http.StatusSeeOther)
	r := e.post("/schedules/b/run", "", url.Values{})
	if c := cookies(r); !strings.Contains(c, "buffered") {
		t.Errorf("second run while the first waits: flash %q, want buffered", c)
	}
	page := e.get("/schedules", "").want(t, 200).body
	if !strings.Contains(page, "buffer-one") || !strings.Contains(page, "<dt>Buffered</dt>") {
		t.Errorf("schedules page does not show the policy and the buffered run")
	}
}
