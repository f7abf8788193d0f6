package schedule

import "testing"

func BenchmarkNext(b *testing.B) {
	cases := []struct {
		name, spec, loc string
	}{
		{"EveryMinute/UTC", "* * * * *", "UTC"},
		{"Weekdays/Berlin", "0 2 * * MON-FRI", "Europe/Berlin"},
		{"GapAndRepeat/Berlin", "*/15 2 * * *", "Europe/Berlin"},
		{"EverySecond/NewYork", "* * * * * *", "America/New_York"},
		{"Yearly/NewYork", "@yearly", "America/New_York"},
		{"Feb29/UTC", "0 0 29 2 *", "UTC"},
		{"Impossible/Berlin", "0 0 30 2 *", "Europe/Berlin"},
		{"Every/UTC", "@every 1m30s", "UTC"},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			r := mustParse(b, bc.spec, mustLoc(b, bc.loc))
			start := mustTime(b, "2026-01-01T00:00:00Z")
			t := start
			for b.Loop() {
				if t = r.Next(t); t.IsZero() || t.Year() > 2040 {
					t = start
				}
			}
		})
	}
}
