package cli

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// TestScheduleListZone: a cron schedule's times are shown in its own zone,
// with the zone, in the table and in the JSON.
func TestScheduleListZone(t *testing.T) {
	t.Parallel()
	berlin := mustZone(t, "Europe/Berlin")
	db := newDB(t)
	hop(t, db, "schedule", "add", "backup", "--cron", "0 3 * * *", "--tz", "Europe/Berlin", "exec", "--", "true").ok(t).
		has(t, "03:00:00 CE") // CET or CEST
	r := hop(t, db, "schedule", "list").ok(t)
	// The next 03:00 in Berlin, with its date unless that is today there
	// (between midnight and 03:00 Berlin time).
	now := time.Now().In(berlin)
	next, layout := now, "15:04:05 MST"
	if now.Hour() >= 3 {
		next, layout = now.AddDate(0, 0, 1), "2006-01-02 15:04:05 MST"
	}
	want := time.Date(next.Year(), next.Month(), next.Day(), 3, 0, 0, 0, berlin).Format(layout)
	r.has(t, want)

	var raw []map[string]any
	r = hop(t, db, "schedule", "list", "--json").ok(t)
	r.decode(&raw)
	if len(raw) != 1 {
		t.Fatalf("%d schedules", len(raw))
	}
	at, _ := raw[0]["next_run_at"].(string)
	if !strings.Contains(at, "T03:00:00+0") {
		t.Errorf("next_run_at %q: want 03:00 with Berlin's offset", at)
	}
	if raw[0]["overlap"] != "skip" || raw[0]["job_timeout"] != "24h0m0s" {
		t.Errorf("overlap %v, job_timeout %v: want skip and 24h0m0s", raw[0]["overlap"], raw[0]["job_timeout"])
	}
	var scheds []*hopper.Schedule // the JSON still decodes as schedules
	r.decode(&scheds)
	if len(scheds) != 1 || scheds[0].Name != "backup" || scheds[0].NextRunAt.In(berlin).Hour() != 3 {
		t.Fatalf("schedules %+v", scheds)
	}
}

// TestScheduleAddTimeout: schedule add says what timeout fired jobs get
// when it sets none: the period, at least a minute.
func TestScheduleAddTimeout(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "schedule", "add", "hourly", "--every", "1h", "exec", "--", "true").ok(t).
		has(t, "no --timeout given", "times out after 1h0m (the schedule's period", "at least 1m")
	// Not "the schedule's period, 1m": its period is 10s.
	hop(t, db, "schedule", "add", "fast", "--every", "10s", "exec", "--", "true").ok(t).
		has(t, "times out after 1m (the schedule's period: the time to its next tick, but at least 1m)")
	hop(t, db, "schedule", "add", "twice", "--cron", "0 9,17 * * *", "exec", "--", "true").ok(t).
		has(t, "between 8h0m and 16h0m")
	hop(t, db, "schedule", "add", "own", "--every", "1h", "--timeout", "5m", "exec", "--", "true").ok(t).
		has(t, "times out after 5m0s (--timeout)")
	var v map[string]any
	hop(t, db, "schedule", "add", "j", "--json", "--every", "2h", "exec", "--", "true").ok(t).decode(&v)
	if v["job_timeout"] != "2h0m0s" || v["overlap"] != "skip" {
		t.Fatalf("schedule add --json: %v", v)
	}
}

// TestScheduleListOutcome: schedule list shows the ticks skipped since the
// last fire and when the last was, and the last job's state with a short
// error when it died.
func TestScheduleListOutcome(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	c, err := hopper.Open(ctx, "sqlite:"+db, hopper.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)

	// busy fires, then its next tick comes while its job waits to run:
	// skipped. The ticks are stepped through with FireSchedules; its job
	// is in a queue nobody works.
	hop(t, db, "schedule", "add", "busy", "--every", "1h", "--queue", "parked", "exec", "--", "true").ok(t)
	now := time.Now()
	c.FireSchedules(ctx, now.Add(2*time.Hour))
	c.FireSchedules(ctx, now.Add(4*time.Hour))
	sc, err := c.GetSchedule(ctx, "busy")
	if err != nil || sc.SkippedTicks != 1 || sc.LastJobID == 0 {
		t.Fatalf("busy: %+v %v", sc, err)
	}
	busyJob := sc.LastJobID

	// boom fires once (at its first tick) and its job dies.
	hop(t, db, "schedule", "add", "boom", "--every", "1s", "--max-attempts", "1", "exec", "--", "sh", "-c", "echo boom >&2; exit 3").ok(t)
	sc, err = c.GetSchedule(ctx, "boom")
	if err != nil {
		t.Fatal(err)
	}
	c.FireSchedules(ctx, sc.NextRunAt)
	hop(t, db, "schedule", "pause", "boom").ok(t)
	if sc, err = c.GetSchedule(ctx, "boom"); err != nil || sc.LastJobID == 0 {
		t.Fatalf("boom did not fire: %+v %v", sc, err)
	}
	if j := workQueues(t, db, []string{"default"}, sc.LastJobID)[0]; j.State != hopper.StateDead {
		t.Fatalf("boom's job: %s", j.State)
	}

	r := hop(t, db, "schedule", "list").ok(t)
	r.has(t, "SKIPPED", "LAST JOB", "1 (last ", idArg(busyJob)+" available", idArg(sc.LastJobID)+" dead: exec sh: exit code 3: boom")
	var raw []map[string]json.RawMessage
	hop(t, db, "schedule", "list", "--json").ok(t).decode(&raw)
	byName := map[string]map[string]json.RawMessage{}
	for _, m := range raw {
		var name string
		json.Unmarshal(m["name"], &name)
		byName[name] = m
	}
	for name, want := range map[string]map[string]string{
		"busy": {"skipped_ticks": "1", "last_job_state": `"available"`},
		"boom": {"last_job_state": `"dead"`, "overlap": `"skip"`},
	} {
		for k, v := range want {
			if got := string(byName[name][k]); got != v {
				t.Errorf("%s: %s = %s, want %s", name, k, got, v)
			}
		}
	}
	if _, ok := byName["busy"]["last_skip_at"]; !ok {
		t.Error("busy: no last_skip_at")
	}
	if e := string(byName["boom"]["last_job_error"]); !strings.Contains(e, "exit code 3: boom") {
		t.Errorf("boom: last_job_error %s", e)
	}
}

// TestScheduleGetMonitorOutput: schedule list shows each schedule's
// monitor; schedule get shows it whole with the outputs it keeps and its
// open incidents, in text and --json.
func TestScheduleGetMonitorOutput(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "schedule", "add", "watched", "--every", "1m", "--start-grace", "5s", "--max-duration", "1h", "--alert-after-failures", "3",
		"--pause-on-failures", "--notify", "ops", "--keep-succeeded", "1", "--keep-failed=-1", "--keep-output-for", "48h", "exec", "--", "true").ok(t)
	hop(t, db, "schedule", "add", "plain", "--every", "1h", "exec", "--", "true").ok(t)
	hop(t, db, "schedule", "list").ok(t).has(t, "MONITOR", "start within 5s, finish within 1h, alert after 3 consecutive failures and pause; notify ops")

	// Let the monitor find the missed start of watched.
	c, err := hopper.Open(context.Background(), "sqlite:"+db, hopper.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	c.CheckMonitors(context.Background(), time.Now().Add(2*time.Minute))
	if err := c.StopNow(); err != nil {
		t.Fatal(err)
	}

	hop(t, db, "schedule", "get", "watched").ok(t).has(t,
		"monitor:        start within 5s, finish within 1h, alert after 3 consecutive failures and pause; notify ops\n",
		"output kept:    the newest 1 successful and 0 failed runs, at most 48h old (hopper jobs output ID)\n",
		"open incident:  ", " missed_start since ")
	hop(t, db, "schedule", "get", "plain").ok(t).has(t, "monitor:        no checks\n",
		"output kept:    the newest 3 successful and 10 failed runs (the defaults)", "open incidents: none\n")
	hop(t, db, "schedule", "get", "nope").fails(t, ExitError, `schedule "nope" not found`)

	var got struct {
		Monitor struct {
			StartGrace string   `json:"start_grace"`
			Channels   []string `json:"channels"`
		} `json:"monitor"`
		OutputKept struct {
			Succeeded, Failed int
			MaxAge            string `json:"max_age"`
		} `json:"output_kept"`
		Incidents []*hopper.Incident `json:"open_incidents"`
	}
	hop(t, db, "--json", "schedule", "get", "watched").ok(t).decode(&got)
	if got.Monitor.StartGrace != "5s" || len(got.Monitor.Channels) != 1 || got.OutputKept.Succeeded != 1 || got.OutputKept.Failed != 0 ||
		got.OutputKept.MaxAge != "48h0m0s" || len(got.Incidents) != 1 || got.Incidents[0].Problem != "missed_start" {
		t.Errorf("--json: %+v", got)
	}
	var list []struct {
		Name       string                          `json:"name"`
		OutputKept struct{ Succeeded, Failed int } `json:"output_kept"`
	}
	hop(t, db, "--json", "schedule", "list").ok(t).decode(&list)
	if len(list) != 2 || list[0].Name != "plain" || list[0].OutputKept.Succeeded != 3 || list[0].OutputKept.Failed != 10 {
		t.Errorf("list --json: %+v", list)
	}
}
