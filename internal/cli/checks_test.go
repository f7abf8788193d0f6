package cli

import (
	"context"
	"log/slog"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// TestCheckCommands: check add prints the ping URL, list and get show
// the status and the recent pings, pause and resume, rm; bad flags are
// usage errors naming the flag.
func TestCheckCommands(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "check", "add", "backup", "--cron", "0 3 * * *", "--tz", "Europe/Berlin", "--grace", "30m", "--notify", "ops",
		"--url", "https://hopper.example.com/").ok(t).has(t, "check backup added; ping it at https://hopper.example.com/ping/")
	hop(t, db, "check", "add", "beat", "--period", "5m", "--ping-id", "5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278").ok(t).
		has(t, "/ping/5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278")
	hop(t, db, "check", "add", "x", "--period", "1h", "--cron", "@daily").fails(t, ExitUsage, "bad --period")
	hop(t, db, "check", "add", "x", "--cron", "0 3 * * *", "--tz", "Nowhere/Land").fails(t, ExitUsage, "bad --tz")
	hop(t, db, "check", "add", "beat", "--period", "5m").fails(t, 1, "duplicate")

	var views []job.CheckView
	hop(t, db, "--json", "check", "list").ok(t).decode(&views)
	if len(views) != 2 || views[0].Name != "backup" || views[0].Status != job.CheckNew || len(views[0].PingID) != 22 || views[1].Name != "beat" {
		t.Fatalf("check list --json: %+v", views)
	}
	hop(t, db, "check", "list").ok(t).has(t, "backup", "new", "0 3 * * * (Europe/Berlin)", "every 5m0s")

	c, err := hopper.Open(context.Background(), "sqlite:"+db, hopper.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	code := 2
	if _, _, err := c.PingCheck(context.Background(), views[1].PingID, hopper.Ping{Kind: job.PingFail, ExitCode: &code, Body: "disk full", RID: "r1"}); err != nil {
		t.Fatal(err)
	}
	c.StopNow()
	hop(t, db, "check", "get", "beat").ok(t).has(t, "status:    down", "ping URL:  /ping/5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278",
		"fail", "disk full", "r1")
	hop(t, db, "check", "pause", "beat").ok(t).has(t, "check beat paused")
	hop(t, db, "check", "resume", "beat").ok(t).has(t, "check beat new")
	hop(t, db, "check", "rm", "beat").ok(t).has(t, "check beat removed")
	hop(t, db, "check", "get", "beat").fails(t, 1, "not found")
}
