package schedule

import (
	"errors"
	"testing"
	"time"
)

func FuzzParse(f *testing.F) {
	seeds := []string{
		"* * * * *", "*/5 * * * *", "0 2 * * MON-FRI", "0 0 1 * mon", "0 0 */2 * 1",
		"30 2 * * *", "*/15 2 * * *", "0,30 2,3 * * *", "0 0 29 2 *", "0 0 30 2 *",
		"59 23 31 12 *", "5/20 1-10/3 * JAN,jul 7", "*/10 * * * * *", "0 30 2 * * SUN",
		"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
		"@every 1m30s", "@every 1s", "@every 500ms", "@every 2540400h10m10.000000000s",
		"CRON_TZ=Europe/Berlin 0 2 * * *", "TZ=America/New_York @daily", "CRON_TZ=Mars/Olympus * * * * *",
		"", "61 * * * *", "5-1 * * * *", "*/0 * * * *", "1,,2 * * * *", "@foo", "* * * *",
	}
	for i, s := range seeds {
		f.Add(s, int64(1774746000+i*86400*37))
	}
	f.Add("* * * * * *", int64(1<<62))
	f.Add("@every 1h", int64(-1<<62))
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, spec string, unix int64) {
		r, err := Parse(spec, berlin)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Spec != spec || pe.Reason == "" {
				t.Fatalf("Parse(%q) error %#v, want *ParseError with Spec and Reason", spec, err)
			}
			return
		}
		r2, err := Parse(r.String(), berlin)
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not re-parse: %v", spec, r.String(), err)
		}
		if r2.String() != r.String() {
			t.Fatalf("String not stable: %q -> %q -> %q", spec, r.String(), r2.String())
		}
		from := time.Unix(unix, int64(uint64(unix)%1e9))
		for _, tm := range []time.Time{from, from.Add(-time.Hour), {}, time.Unix(unix%(1<<34), 0)} {
			n := r.Next(tm)
			if !n.IsZero() && !n.After(tm) {
				t.Fatalf("Parse(%q).Next(%v) = %v, not after", spec, tm, n)
			}
			if n2 := r2.Next(tm); !n2.Equal(n) {
				t.Fatalf("Parse(%q).Next(%v) = %v but re-parsed %q gives %v", spec, tm, n, r.String(), n2)
			}
			if !n.IsZero() {
				if nn := r.Next(n); !nn.IsZero() && !nn.After(n) {
					t.Fatalf("Parse(%q).Next(%v) = %v, not after", spec, n, nn)
				}
			}
		}
	})
}
