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
