package schedule

import (
	"math"
	"testing"
	"time"
)

func TestNextEverySpec(t *testing.T) {
	t.Parallel()
	runNextCases(t, []nextCase{
		{name: "90s anchored at the epoch", spec: "@every 1m30s", from: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T00:01:30Z", "2026-01-01T00:03:00Z", "2026-01-01T00:04:30Z"}},
		{name: "hour", spec: "@every 1h", from: "2026-01-01T10:59:59.5Z",
			want: []string{"2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z"}},
		{name: "odd interval keeps cadence", spec: "@every 7s", from: "1970-01-01T00:00:06Z",
			want: []string{"1970-01-01T00:00:07Z", "1970-01-01T00:00:14Z"}},
		{name: "before the epoch", spec: "@every 7s", from: "1969-12-31T23:59:50Z",
			want: []string{"1969-12-31T23:59:53Z", "1970-01-01T00:00:00Z", "1970-01-01T00:00:07Z"}},
		{name: "sub-second interval part", spec: "@every 1.5s", from: "1970-01-01T00:00:02Z",
			want: []string{"1970-01-01T00:00:03Z", "1970-01-01T00:00:04.5Z"}},
		{name: "zone does not move the grid", spec: "@every 1h", loc: "Asia/Kolkata", from: "2026-01-01T00:10:00Z",
			want: []string{"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"}},
	})
}

func TestEvery(t *testing.T) {
	t.Parallel()
	anchor := mustTime(t, "2026-01-01T09:00:00Z")
	cases := []struct {
		name   string
		d      time.Duration
		anchor time.Time
		from   time.Time
		want   []time.Time
	}{
		{"from the anchor", 90 * time.Minute, anchor, anchor,
			[]time.Time{anchor.Add(90 * time.Minute), anchor.Add(180 * time.Minute)}},
		{"missed ticks are skipped", 90 * time.Minute, anchor, anchor.Add(1000 * time.Minute),
			[]time.Time{anchor.Add(1080 * time.Minute), anchor.Add(1170 * time.Minute)}},
		{"before the anchor keeps the phase", time.Hour, anchor, anchor.Add(-150 * time.Minute),
			[]time.Time{anchor.Add(-2 * time.Hour), anchor.Add(-time.Hour), anchor}},
		{"zero anchor is the epoch", 10 * time.Second, time.Time{}, time.Unix(25, 1),
			[]time.Time{time.Unix(30, 0), time.Unix(40, 0)}},
		{"nanosecond anchor", time.Second, time.Unix(0, 250), time.Unix(5, 0),
			[]time.Time{time.Unix(5, 250), time.Unix(6, 250)}},
		{"centuries away", 24 * time.Hour, anchor, anchor.AddDate(500, 0, 0).Add(time.Minute),
			[]time.Time{anchor.AddDate(500, 0, 1)}},
		{"centuries before", 24 * time.Hour, anchor, anchor.AddDate(-500, 0, 0).Add(-time.Minute),
			[]time.Time{anchor.AddDate(-500, 0, 0)}},
		{"huge interval", math.MaxInt64, time.Time{}, time.Unix(0, 0),
			[]time.Time{time.Unix(0, math.MaxInt64)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := Every(tc.d, tc.anchor)
			if err != nil {
				t.Fatalf("Every(%v, %v): %v", tc.d, tc.anchor, err)
			}
			cur := tc.from
			for i, want := range tc.want {
				got := r.Next(cur)
				if !got.Equal(want) {
					t.Fatalf("Every(%v, %v) step %d: Next(%v) = %v, want %v", tc.d, tc.anchor, i, cur, got, want)
				}
				cur = got
			}
		})
	}
}

func TestEveryDST(t *testing.T) {
	t.Parallel()
	berlin := mustLoc(t, "Europe/Berlin")
	anchor := time.Date(2026, 3, 28, 2, 30, 0, 0, berlin)
	r, err := Every(24*time.Hour, anchor)
	if err != nil {
		t.Fatal(err)
	}
	// A pure duration: 24h after 02:30 CET is 03:30 CEST.
	got := r.Next(anchor)
	if want := "2026-03-29 03:30 CEST"; got.Format("2006-01-02 15:04 MST") != want {
		t.Errorf("Next(%v) = %v, want %s", anchor, got, want)
	}
	if got.Location() != berlin {
		t.Errorf("Next location = %v, want the anchor's %v", got.Location(), berlin)
	}
}

func TestEveryErrors(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, -time.Second, 999 * time.Millisecond} {
		if r, err := Every(d, time.Time{}); err == nil {
			t.Errorf("Every(%v) = %v, want error", d, r)
		}
	}
}

func TestEveryString(t *testing.T) {
	t.Parallel()
	r, err := Every(90*time.Second, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.String(), "@every 1m30s"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestEveryExtremes(t *testing.T) {
	t.Parallel()
	r, err := Every(time.Hour, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	maxTime := time.Unix(1<<63-1-62135596800, 999999999)
	for _, from := range []time.Time{maxTime, time.Unix(-1<<63, 0), {}, time.Unix(1<<62, 0)} {
		if got := r.Next(from); !got.IsZero() && !got.After(from) {
			t.Errorf("Next(%v) = %v, want zero or after", from, got)
		}
	}
}
