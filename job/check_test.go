package job

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

var ct0 = time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)

func TestNewPingID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		id := NewPingID()
		if len(id) != 22 || CheckPingID(id) != nil || seen[id] {
			t.Fatalf("NewPingID: %q (valid: %v, seen: %v)", id, CheckPingID(id), seen[id])
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "short", "AAAAAAAAAAAAAAAAAAAAA/", "AAAAAAAAAAAAAAAAAAAAA%"} {
		if CheckPingID(bad) == nil {
			t.Errorf("CheckPingID(%q): no error", bad)
		}
	}
	if err := CheckPingID("5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278"); err != nil { // a Healthchecks UUID
		t.Errorf("a UUID: %v", err)
	}
}

func TestCheckValidation(t *testing.T) {
	t.Parallel()
	ok := Check{Name: "c", PingID: NewPingID(), Period: time.Hour, Grace: time.Minute}
	for _, tc := range []struct {
		field string
		edit  func(*Check)
	}{
		{"period", func(c *Check) { c.Period = 0 }},
		{"period", func(c *Check) { c.Cron = "@daily" }},
		{"period", func(c *Check) { c.Period = time.Millisecond }},
		{"time_zone", func(c *Check) { c.TimeZone = "UTC" }},
		{"grace", func(c *Check) { c.Grace = 0 }},
		{"cron", func(c *Check) { c.Period, c.Cron = 0, "61 * * * *" }},
		{"cron", func(c *Check) { c.Period, c.Cron = 0, "@every 1h" }},
		{"time_zone", func(c *Check) { c.Period, c.Cron, c.TimeZone = 0, "@daily", "Mars/Olympus" }},
		{"ping_id", func(c *Check) { c.PingID = "x" }},
		{"name", func(c *Check) { c.Name = "" }},
		{"channels", func(c *Check) { c.Channels = []string{""} }},
		{"channels", func(c *Check) {
			c.Channels = make([]string, MaxMonitorChannels+1)
			for i := range c.Channels {
				c.Channels[i] = fmt.Sprintf("ch%d", i)
			}
		}},
	} {
		c := ok
		tc.edit(&c)
		var fe *FieldError
		if err := c.Check(); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%+v: got %v, want a FieldError on %s", c, err, tc.field)
		}
	}
	if err := ok.Check(); err != nil {
		t.Error(err)
	}
}

// TestCheckStatus follows a check with period 1h and grace 10m through
// its statuses, as Healthchecks names them.
func TestCheckStatus(t *testing.T) {
	t.Parallel()
	c := &Check{Name: "c", Period: time.Hour, Grace: 10 * time.Minute}
	at := func(m int) time.Time { return ct0.Add(time.Duration(m) * time.Minute) }
	want := func(m int, s string) {
		t.Helper()
		if got := c.Status(at(m)); got != s {
			t.Errorf("at +%dm: got %s, want %s", m, got, s)
		}
	}
	want(10_000, CheckNew)
	c.Apply(&Ping{Kind: PingLog, At: at(0)})
	want(10_000, CheckNew)
	c.Apply(&Ping{Kind: PingSuccess, At: at(0)})
	want(59, CheckUp)
	want(60, CheckGrace)
	want(69, CheckGrace)
	want(70, CheckDown)
	if c.DownReason(at(70)) == "" || c.DownReason(at(69)) != "" {
		t.Error("DownReason")
	}
	c.Apply(&Ping{Kind: PingStart, At: at(65), RID: "r"})
	want(66, CheckGrace) // still late: a start is no success
	c.Apply(&Ping{Kind: PingSuccess, At: at(66), RID: "r"})
	want(67, CheckUp)
	if c.LastDuration != time.Minute {
		t.Errorf("LastDuration %v, want 1m", c.LastDuration)
	}
	c.Apply(&Ping{Kind: PingStart, At: at(70)})
	want(71, CheckStarted)
	want(80, CheckDown) // the run did not finish within the grace
	c.Apply(&Ping{Kind: PingFail, At: at(81)})
	want(81, CheckDown)
	if !c.DownAt().IsZero() {
		t.Error("a failed check has a DownAt")
	}
	c.SetPaused(true)
	want(10_000, CheckPaused)
	c.SetPaused(false)
	want(10_000, CheckNew)
	for i := range MaxOpenRuns + 5 {
		c.Apply(&Ping{Kind: PingStart, At: at(100 + i), RID: string(rune('a' + i))})
	}
	if len(c.Runs) != MaxOpenRuns || c.Runs[0].RID != "f" {
		t.Errorf("runs: %+v, want the latest %d", c.Runs, MaxOpenRuns)
	}
}

// TestCheckCronDue: a cron check's ping is due at the first tick after
// the last ping, in its time zone (across the DST change of 2026-03-29 in
// Berlin).
func TestCheckCronDue(t *testing.T) {
	t.Parallel()
	c := &Check{Name: "c", Cron: "30 2 * * *", TimeZone: "Europe/Berlin", Grace: time.Hour, PingID: NewPingID()}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	c.Apply(&Ping{Kind: PingSuccess, At: ct0}) // 13:00 in Berlin, Saturday 28 March
	// 02:30 does not exist on Sunday 29 March in Berlin: the parser's
	// rule (package schedule) moves it to 03:00 CEST, 01:00 UTC.
	want := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
	if got := c.Due(); !got.Equal(want) {
		t.Errorf("Due: got %v, want %v", got, want)
	}
	if got := c.DownAt(); !got.Equal(want.Add(time.Hour)) {
		t.Errorf("DownAt: got %v", got)
	}
}

// TestPingArmed: Apply marks the pings that give a check a time to go
// down it had none of, which the client wakes the monitor for.
func TestPingArmed(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := &Check{Name: "c", Period: time.Minute, Grace: time.Minute}
	for i, s := range []struct {
		pause, resume bool
		kind          PingKind
		want          bool
	}{
		{kind: PingLog},                              // new
		{kind: PingStart},                            // new, with a run
		{kind: PingSuccess, want: true},              // the first success
		{kind: PingSuccess},                          // up: a later deadline
		{kind: PingStart},                            // an earlier one, but the start wakes the monitor anyway
		{kind: PingFail},                             // down: none
		{kind: PingFail},                             // still none
		{kind: PingSuccess, want: true},              // up after a failure
		{pause: true, resume: true, kind: PingLog},   // new again
		{kind: PingSuccess, want: true},              // the first since the resume
		{pause: true, kind: PingSuccess, want: true}, // resumes it
		{pause: true, resume: true, kind: PingFail},  // a new check failed: down, no deadline
		{kind: PingSuccess, want: true},
	} {
		if s.pause {
			c.SetPaused(true)
		}
		if s.resume {
			c.SetPaused(false)
		}
		p := c.Apply(&Ping{Kind: s.kind, At: t0.Add(time.Duration(i) * time.Second)})
		if p.Armed != s.want {
			t.Errorf("step %d (%s): Armed %v, want %v", i, s.kind, p.Armed, s.want)
		}
	}
}
