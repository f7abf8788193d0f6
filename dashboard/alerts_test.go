package dashboard

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/dashtest"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store/memstore"
)

// TestAlertsPage: the alerts page lists a schedule's incident, open, with
// its detail escaped and its job linked; the navigation links to it.
func TestAlertsPage(t *testing.T) {
	t.Parallel()
	c, err := hopper.NewClient(hopper.Config{Store: memstore.New(), Workers: dashtest.Kinds()})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, c, Options{})
	if body := e.get("/alerts", "").want(t, 200).body; !strings.Contains(body, "No incidents") {
		t.Errorf("no empty note in\n%s", clip(body))
	}
	ctx := context.Background()
	kind := dashtest.Kinds().Kinds()[0]
	if _, err := c.AddSchedule(ctx, "<b>nightly</b>", hopper.ScheduleOptions{Every: time.Minute, Kind: kind,
		Monitor: &hopper.Monitor{StartGrace: 5 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	c.CheckMonitors(ctx, time.Now().Add(2*time.Minute))
	body := e.get("/alerts", "").want(t, 200).body
	for _, want := range []string{`<a href="/alerts" aria-current="page">Alerts</a>`, "1 open", "schedule:&lt;b&gt;nightly&lt;/b&gt;",
		`data-open>missed_start</span>`, "did not fire within 5s"} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in the alerts page\n%s", want, clip(body))
		}
	}
	if strings.Contains(body, "<b>nightly") {
		t.Error("the subject is not escaped")
	}
}

// TestAlertsPageChecks: the alerts page lists the external checks with
// their status and last ping; the ping URL, a bearer secret, is shown to
// admin tokens only (docs/security.md).
func TestAlertsPageChecks(t *testing.T) {
	t.Parallel()
	c, err := hopper.NewClient(hopper.Config{Store: memstore.New(), Workers: dashtest.Kinds()})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, c, Options{Auth: dashtest.Tokens(t)})
	if body := e.get("/alerts", dashtest.ReadToken).want(t, 200).body; !strings.Contains(body, "No checks") {
		t.Errorf("no empty note in\n%s", clip(body))
	}
	ctx := context.Background()
	ch, err := c.AddCheck(ctx, "<i>backup</i>", hopper.CheckOptions{Cron: "0 3 * * *", TimeZone: "Europe/Berlin", Grace: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddCheck(ctx, "late", hopper.CheckOptions{Period: time.Minute, Grace: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PingCheck(ctx, ch.PingID, hopper.Ping{Kind: job.PingFail}); err != nil {
		t.Fatal(err)
	}
	admin := e.get("/alerts", dashtest.AdminToken).want(t, 200).body
	for _, want := range []string{`data-check="&lt;i&gt;backup&lt;/i&gt;"`, `data-status>down</span>`, `data-status>new</span>`,
		"<code>0 3 * * *</code> (Europe/Berlin)", "every 1m0s", `<code data-ping-url>/ping/` + ch.PingID + `</code>`} {
		if !strings.Contains(admin, want) {
			t.Errorf("no %q in the admin's alerts page\n%s", want, clip(admin))
		}
	}
	read := e.get("/alerts", dashtest.ReadToken).want(t, 200).body
	if strings.Contains(read, ch.PingID) || !strings.Contains(read, "admin only") {
		t.Errorf("a read token sees the ping ID, or no note\n%s", clip(read))
	}
}

// TestSchedulesMonitorAndOutput: the schedules page shows each schedule's
// monitor (its checks and channels, escaped), its output retention (the
// defaults said so) and its open incidents, and "no checks" for a
// schedule without a monitor.
func TestSchedulesMonitorAndOutput(t *testing.T) {
	t.Parallel()
	c, err := hopper.NewClient(hopper.Config{Store: memstore.New(), Workers: dashtest.Kinds()})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, c, Options{})
	ctx := context.Background()
	kind := dashtest.Kinds().Kinds()[0]
	if _, err := c.AddSchedule(ctx, "watched", hopper.ScheduleOptions{Every: time.Minute, Kind: kind,
		Monitor: &hopper.Monitor{StartGrace: 5 * time.Second, MaxDuration: time.Hour, AlertAfterFailures: 3, PauseOnFailures: true,
			Channels: []string{"<ops>", "mailto-ops-example-com"}},
		OutputRetention: hopper.OutputRetention{Succeeded: 1, Failed: -1, MaxAge: 48 * time.Hour}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddSchedule(ctx, "plain", hopper.ScheduleOptions{Every: time.Hour, Kind: kind}); err != nil {
		t.Fatal(err)
	}
	c.CheckMonitors(ctx, time.Now().Add(2*time.Minute))
	body := e.get("/schedules", "").want(t, 200).body
	// The schedules are in name order: plain, then watched.
	_, rest, ok1 := strings.Cut(body, `data-schedule="plain"`)
	plain, watched, ok2 := strings.Cut(rest, `data-schedule="watched"`)
	if !ok1 || !ok2 {
		t.Fatalf("no plain then watched schedule in\n%s", clip(body))
	}
	for _, want := range []string{
		"<dd data-monitor>start within 5s, finish within 1h, alert after 3 consecutive failures and pause; notify &lt;ops&gt;, mailto-ops-example-com</dd>",
		"<dd data-output-kept>the newest 1 successful and 0 failed runs, at most 48h old</dd>",
		`data-incidents><a href="/alerts">missed_start</a>`, "did not fire within 5s",
	} {
		if !strings.Contains(watched, want) {
			t.Errorf("no %q in the watched schedule\n%s", want, clip(watched))
		}
	}
	for _, want := range []string{`<span class="muted">no checks</span>`,
		`the newest 3 successful and 10 failed runs <span class="muted">(defaults)</span>`} {
		if !strings.Contains(plain, want) {
			t.Errorf("no %q in the plain schedule\n%s", want, clip(plain))
		}
	}
	if strings.Contains(plain, "data-incidents") {
		t.Error("the plain schedule shows incidents")
	}
}
