package schedule

import (
	"slices"
	"testing"
	"time"
	_ "time/tzdata" // hermetic time zones for the tests
)

// mustLoc loads a time zone or fails the test.
func mustLoc(tb testing.TB, name string) *time.Location {
	tb.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		tb.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

// mustTime parses an RFC 3339 time or fails the test.
func mustTime(tb testing.TB, s string) time.Time {
	tb.Helper()
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		tb.Fatalf("time.Parse(%q): %v", s, err)
	}
	return t
}

// mustParse parses a spec or fails the test.
func mustParse(tb testing.TB, spec string, loc *time.Location) Rule {
	tb.Helper()
	r, err := Parse(spec, loc)
	if err != nil {
		tb.Fatalf("Parse(%q): %v", spec, err)
	}
	return r
}

// sequence returns the first n fire times after from, formatted as UTC
// RFC 3339 instants ("zero" for the zero Time, after which it stops).
func sequence(r Rule, from time.Time, n int) []string {
	var out []string
	t := from
	for range n {
		t = r.Next(t)
		if t.IsZero() {
			return append(out, "zero")
		}
		out = append(out, t.UTC().Format(time.RFC3339Nano))
	}
	return out
}

// nextCase is one row of a table of Next sequences.
type nextCase struct {
	name string
	spec string
	loc  string // time zone name; "" means UTC
	from string // RFC 3339
	want []string
}

// runNextCases checks each case's Next sequence.
func runNextCases(t *testing.T, cases []nextCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			loc := time.UTC
			if tc.loc != "" {
				loc = mustLoc(t, tc.loc)
			}
			r := mustParse(t, tc.spec, loc)
			got := sequence(r, mustTime(t, tc.from), len(tc.want))
			if !slices.Equal(got, tc.want) {
				t.Errorf("Parse(%q, %s) from %s:\n got %v\nwant %v", tc.spec, loc, tc.from, got, tc.want)
			}
		})
	}
}

// matchesWall reports whether wall-clock time tm (in its own location)
// matches rule c, using the time package's calendar.
func matchesWall(c *cronRule, tm time.Time) bool {
	_, mo, d := tm.Date()
	h, mi, s := tm.Clock()
	has := func(mask uint64, v int) bool { return mask&(1<<uint(v)) != 0 }
	if !has(c.second, s) || !has(c.minute, mi) || !has(c.hour, h) || !has(c.month, int(mo)) {
		return false
	}
	domOK, dowOK := has(c.dom, d), has(c.dow, int(tm.Weekday()))
	if c.domOrDow {
		return domOK || dowOK
	}
	return domOK && dowOK
}
