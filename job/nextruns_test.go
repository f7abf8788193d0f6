package job_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
)

// TestNextRunsAcrossDST: golden tables of Schedule.NextRuns over the DST
// changes of 2026 in three zones, written in each zone's local time with
// its offset. A time in a spring-forward gap fires once at the gap's end;
// a time repeated by a fall-back fires once, in the first pass.
//
//   - Europe/Berlin: 03-29 02:00 CET (+01) -> 03:00 CEST (+02); 10-25
//     03:00 CEST -> 02:00 CET.
//   - America/New_York: 03-08 02:00 EST (-05) -> 03:00 EDT (-04); 11-01
//     02:00 EDT -> 01:00 EST.
//   - Australia/Lord_Howe, a half-hour shift: 04-05 02:00 (+11) -> 01:30
//     (+10:30); 10-04 02:00 (+10:30) -> 02:30 (+11).
func TestNextRunsAcrossDST(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, spec, zone, next string // next: the stored next tick
		want                   []string
	}{
		{"Berlin spring, daily in the gap", "30 2 * * *", "Europe/Berlin", "2026-03-28T02:30:00+01:00",
			[]string{"2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00", "2026-04-01T02:30:00+02:00"}},
		{"Berlin autumn, daily in the repeated hour", "30 2 * * *", "Europe/Berlin", "2026-10-24T02:30:00+02:00",
			[]string{"2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00", "2026-10-27T02:30:00+01:00"}},
		{"Berlin autumn, every 30 minutes", "*/30 * * * *", "Europe/Berlin", "2026-10-25T02:00:00+02:00",
			[]string{"2026-10-25T02:00:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-25T03:00:00+01:00", "2026-10-25T03:30:00+01:00"}},
		{"Berlin spring, hourly", "@hourly", "Europe/Berlin", "2026-03-29T01:00:00+01:00",
			[]string{"2026-03-29T01:00:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T04:00:00+02:00"}},
		{"New York spring, daily in the gap", "30 2 * * *", "America/New_York", "2026-03-07T02:30:00-05:00",
			[]string{"2026-03-07T02:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"New York autumn, daily in the repeated hour", "30 1 * * *", "America/New_York", "2026-10-31T01:30:00-04:00",
			[]string{"2026-10-31T01:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"New York autumn, hourly", "0 * * * *", "America/New_York", "2026-11-01T00:00:00-04:00",
			[]string{"2026-11-01T00:00:00-04:00", "2026-11-01T01:00:00-04:00", "2026-11-01T02:00:00-05:00", "2026-11-01T03:00:00-05:00"}},
		{"New York weekdays over spring", "0 9 * * MON-FRI", "America/New_York", "2026-03-06T09:00:00-05:00",
			[]string{"2026-03-06T09:00:00-05:00", "2026-03-09T09:00:00-04:00", "2026-03-10T09:00:00-04:00"}},
		{"Lord Howe spring, daily in the half-hour gap", "15 2 * * *", "Australia/Lord_Howe", "2026-10-03T02:15:00+10:30",
			[]string{"2026-10-03T02:15:00+10:30", "2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
		{"Lord Howe spring, every 30 minutes", "*/30 * * * *", "Australia/Lord_Howe", "2026-10-04T01:00:00+10:30",
			[]string{"2026-10-04T01:00:00+10:30", "2026-10-04T01:30:00+10:30", "2026-10-04T02:30:00+11:00", "2026-10-04T03:00:00+11:00"}},
		{"Lord Howe autumn, daily in the repeated half hour", "45 1 * * *", "Australia/Lord_Howe", "2026-04-04T01:45:00+11:00",
			[]string{"2026-04-04T01:45:00+11:00", "2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"}},
		{"Lord Howe autumn, every 30 minutes", "*/30 * * * *", "Australia/Lord_Howe", "2026-04-05T01:00:00+11:00",
			[]string{"2026-04-05T01:00:00+11:00", "2026-04-05T01:30:00+11:00", "2026-04-05T02:00:00+10:30", "2026-04-05T02:30:00+10:30"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			next := mustTime(t, tc.next)
			sc := &job.Schedule{Name: "s", Spec: tc.spec, TimeZone: tc.zone, Kind: "k", NextRunAt: next.UTC(), CreatedAt: next.Add(-time.Hour)}
			got, err := sc.NextRuns(next.Add(-time.Minute), len(tc.want))
			if err != nil {
				t.Fatal(err)
			}
			var gs []string
			for _, g := range got {
				if g.Location().String() != tc.zone {
					t.Errorf("%s in %s, want %s", g, g.Location(), tc.zone)
				}
				gs = append(gs, g.Format(time.RFC3339))
			}
			if strings.Join(gs, " ") != strings.Join(tc.want, " ") {
				t.Errorf("NextRuns:\n got %v\nwant %v", gs, tc.want)
			}
		})
	}
}

func TestNextRuns(t *testing.T) {
	t.Parallel()
	now := mustTime(t, "2026-06-01T12:00:30Z")
	every := &job.Schedule{Name: "e", Spec: "@every 1h", Kind: "k", CreatedAt: mustTime(t, "2026-06-01T10:00:00Z"), NextRunAt: mustTime(t, "2026-06-01T13:00:00Z")}
	got, err := every.NextRuns(now, job.MaxNextRuns)
	if err != nil || len(got) != job.MaxNextRuns {
		t.Fatalf("every 1h, n=%d: %d times, %v", job.MaxNextRuns, len(got), err)
	}
	if !got[0].Equal(every.NextRunAt) || !got[999].Equal(every.NextRunAt.Add(999*time.Hour)) || got[0].Location() != time.UTC {
		t.Errorf("every 1h: first %v last %v", got[0], got[999])
	}
	// Paused: the ticks it would fire if resumed now, not its stale next tick.
	cron := &job.Schedule{Name: "c", Spec: "0 9 * * *", TimeZone: "Europe/Berlin", Kind: "k", Paused: true,
		CreatedAt: mustTime(t, "2026-01-01T00:00:00Z"), NextRunAt: mustTime(t, "2026-02-01T08:00:00Z")}
	if got, err := cron.NextRuns(now, 2); err != nil || len(got) != 2 || got[0].Format(time.RFC3339) != "2026-06-02T09:00:00+02:00" {
		t.Errorf("paused cron: %v, %v; want from 2026-06-02T09:00:00+02:00", got, err)
	}
	// Fixed delay: one run at most.
	fd := &job.Schedule{Name: "f", Spec: "@every 5m", FixedDelay: true, Kind: "k", CreatedAt: now, NextRunAt: now.Add(time.Minute)}
	if got, err := fd.NextRuns(now, 5); err != nil || len(got) != 1 || !got[0].Equal(now.Add(time.Minute)) {
		t.Errorf("fixed delay: %v, %v", got, err)
	}
	fd.NextRunAt = time.Time{} // waiting for its job
	if got, err := fd.NextRuns(now, 5); err != nil || len(got) != 0 {
		t.Errorf("fixed delay waiting for its job: %v, %v", got, err)
	}
	// A rule that stops.
	feb30 := &job.Schedule{Name: "x", Spec: "0 0 29 2 *", Kind: "k", CreatedAt: now, NextRunAt: mustTime(t, "2028-02-29T00:00:00Z")}
	if got, err := feb30.NextRuns(now, 3); err != nil || len(got) != 3 || got[1].Year() != 2032 {
		t.Errorf("29 February: %v, %v", got, err)
	}
	for _, n := range []int{0, -1, job.MaxNextRuns + 1} {
		_, err := every.NextRuns(now, n)
		var fe *job.FieldError
		if !errors.As(err, &fe) || fe.Field != "n" || !strings.Contains(fe.Reason, "between 1 and 1000") {
			t.Errorf("n=%d: %v, want a *FieldError on n", n, err)
		}
	}
}

// BenchmarkNextRuns1000 computes 1,000 fire times (the most NextRuns
// gives), for schedules whose rules cross DST changes.
func BenchmarkNextRuns1000(b *testing.B) {
	for _, bc := range []struct{ name, spec, zone string }{
		{"EveryMinute/UTC", "* * * * *", ""},
		{"Every15m/LordHowe", "*/15 * * * *", "Australia/Lord_Howe"},
		{"Daily0230/Berlin", "30 2 * * *", "Europe/Berlin"},
		{"Weekdays/NewYork", "0 9 * * MON-FRI", "America/New_York"},
		{"Every/UTC", "@every 1m30s", ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			sc := &job.Schedule{Name: "s", Spec: bc.spec, TimeZone: bc.zone, Kind: "k", CreatedAt: now}
			first, err := sc.FirstRun(now)
			if err != nil {
				b.Fatal(err)
			}
			sc.NextRunAt = first
			for b.Loop() {
				if got, err := sc.NextRuns(now, job.MaxNextRuns); err != nil || len(got) != job.MaxNextRuns {
					b.Fatalf("%d times, %v", len(got), err)
				}
			}
		})
	}
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
