package schedule

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestParseValid(t *testing.T) {
	t.Parallel()
	cases := []struct {
		spec, want string
	}{
		{"* * * * *", "* * * * *"},
		{"  */5   *\t* * *  ", "*/5 * * * *"},
		{"0 2 * * mon-fri", "0 2 * * MON-FRI"},
		{"0 0 1 jan,Jul *", "0 0 1 JAN,JUL *"},
		{"0 0 * * 7", "0 0 * * 7"},
		{"1-10/3 * * * *", "1-10/3 * * * *"},
		{"5/20 * * * *", "5/20 * * * *"},
		{"0,15,30,45 9-17 1,15 * 1-5", "0,15,30,45 9-17 1,15 * 1-5"},
		{"*/10 * * * * *", "*/10 * * * * *"},
		{"0 30 2 * * SUN", "0 30 2 * * SUN"},
		{"05 07 * * *", "05 07 * * *"},
		{"*/59 */23 */31 */12 */7", "*/59 */23 */31 */12 */7"},
		{"@yearly", "@yearly"},
		{"@annually", "@yearly"},
		{"@monthly", "@monthly"},
		{"@weekly", "@weekly"},
		{"@DAILY", "@daily"},
		{"@midnight", "@daily"},
		{"@hourly", "@hourly"},
		{"@every 90s", "@every 1m30s"},
		{"@every 1s", "@every 1s"},
		{"@Every 2h", "@every 2h0m0s"},
		{"CRON_TZ=Europe/Berlin 0 2 * * *", "CRON_TZ=Europe/Berlin 0 2 * * *"},
		{"TZ=America/New_York @daily", "CRON_TZ=America/New_York @daily"},
		{"CRON_TZ=UTC @every 1m", "CRON_TZ=UTC @every 1m0s"},
	}
	for _, tc := range cases {
		t.Run(tc.spec, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(tc.spec, nil)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tc.spec, err)
			}
			if got := r.String(); got != tc.want {
				t.Errorf("Parse(%q).String() = %q, want %q", tc.spec, got, tc.want)
			}
		})
	}
}

func TestParseFieldMasks(t *testing.T) {
	t.Parallel()
	bitsOf := func(vs ...int) uint64 {
		var m uint64
		for _, v := range vs {
			m |= 1 << uint(v)
		}
		return m
	}
	cases := []struct {
		text string
		b    bounds
		want uint64
	}{
		{"*", hourBounds, 1<<24 - 1},
		{"*", domBounds, 1<<32 - 2},
		{"*/20", minuteBounds, bitsOf(0, 20, 40)},
		{"1-10/3", minuteBounds, bitsOf(1, 4, 7, 10)},
		{"50/5", secondBounds, bitsOf(50, 55)},
		{"3,1,2", hourBounds, bitsOf(1, 2, 3)},
		{"1-3,10-11", monthBounds, bitsOf(1, 2, 3, 10, 11)},
		{"jan,MAR-may", monthBounds, bitsOf(1, 3, 4, 5)},
		{"nov-DEC/1", monthBounds, bitsOf(11, 12)},
		{"SUN,sat", dowBounds, bitsOf(0, 6)},
		{"5-7", dowBounds, bitsOf(5, 6, 7)}, // 7 is folded into 0 by newCron
		{"*/2", dowBounds, bitsOf(0, 2, 4, 6)},
		{"31", domBounds, bitsOf(31)},
	}
	for _, tc := range cases {
		t.Run(tc.b.name+"/"+tc.text, func(t *testing.T) {
			t.Parallel()
			got, reason := parseField(tc.text, tc.b)
			if reason != "" || got != tc.want {
				t.Errorf("parseField(%q, %s) = %#x, %q; want %#x, \"\"", tc.text, tc.b.name, got, reason, tc.want)
			}
		})
	}
}

func TestParseDayOfWeekSeven(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"0 0 * * 7", "0 0 * * 0", "0 0 * * SUN", "0 0 * * 6-7"} {
		c := mustParse(t, spec, nil).(*cronRule)
		if c.dow&1 == 0 || c.dow&(1<<7) != 0 {
			t.Errorf("Parse(%q) day-of-week mask = %#b, want Sunday as bit 0 only", spec, c.dow)
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	const every = `unknown macro "@foo" (want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every)`
	cases := []struct {
		spec, field, reason string
	}{
		{"", "", "empty spec"},
		{" \t ", "", "empty spec"},
		{"* * * *", "", "expected 5 or 6 fields, found 4"},
		{"* * * * * * *", "", "expected 5 or 6 fields, found 7"},
		{"*", "", "expected 5 or 6 fields, found 1"},
		{"61 * * * *", "minute", "value 61 out of range 0-59"},
		{"60 * * * * *", "second", "value 60 out of range 0-59"},
		{"* 24 * * *", "hour", "value 24 out of range 0-23"},
		{"* * 0 * *", "day-of-month", "value 0 out of range 1-31"},
		{"* * 32 * *", "day-of-month", "value 32 out of range 1-31"},
		{"* * * 0 *", "month", "value 0 out of range 1-12"},
		{"* * * 13 *", "month", "value 13 out of range 1-12"},
		{"* * * * 8", "day-of-week", "value 8 out of range 0-7"},
		{"99999999999999999999 * * * *", "minute", "value 99999999999999999999 out of range 0-59"},
		{"*/0 * * * *", "minute", "step 0 out of range 1-59"},
		{"1-5/0 * * * *", "minute", "step 0 out of range 1-59"},
		{"* */24 * * *", "hour", "step 24 out of range 1-23"},
		{"*/x * * * *", "minute", `invalid step "x" (want a number)`},
		{"*/ * * * *", "minute", `invalid step "" (want a number)`},
		{"1/2/3 * * * *", "minute", `invalid step "2/3" (want a number)`},
		{"5-1 * * * *", "minute", "range 5-1 is reversed (start 5 > end 1)"},
		{"* * * DEC-JAN *", "month", "range DEC-JAN is reversed (start 12 > end 1)"},
		{"* * * * FRI-MON", "day-of-week", "range FRI-MON is reversed (start 5 > end 1)"},
		{"1- * * * *", "minute", `invalid range "1-" (want a-b)`},
		{"-1 * * * *", "minute", `invalid range "-1" (want a-b)`},
		{"1-2-3 * * * *", "minute", `invalid range "1-2-3" (want a-b)`},
		{"1,,2 * * * *", "minute", "empty list element"},
		{"1, * * * *", "minute", "empty list element"},
		{"a * * * *", "minute", `invalid value "a"`},
		{"* * * FOO *", "month", `invalid value "FOO" (want 1-12 or JAN-DEC)`},
		{"* * * mon *", "month", `invalid value "mon" (want 1-12 or JAN-DEC)`},
		{"* * * * MONDAY", "day-of-week", `invalid value "MONDAY" (want 0-7 or SUN-SAT)`},
		{"* * * * jan", "day-of-week", `invalid value "jan" (want 0-7 or SUN-SAT)`},
		{"* * ? * *", "day-of-month", `invalid value "?"`},
		{"@foo", "", every},
		{"@", "", `unknown macro "@" (want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every)`},
		{"@daily 1", "", `unexpected "1" after @daily`},
		{"@every", "", `@every takes exactly one duration, e.g. "@every 1m30s"`},
		{"@every 1m 2m", "", `@every takes exactly one duration, e.g. "@every 1m30s"`},
		{"@every 1x", "duration", "invalid duration (want time.ParseDuration syntax such as 1m30s)"},
		{"@every 10", "duration", "invalid duration (want time.ParseDuration syntax such as 1m30s)"},
		{"@every 500ms", "duration", "interval 500ms is below the 1s minimum"},
		{"@every 0s", "duration", "interval 0s is below the 1s minimum"},
		{"@every -1m", "duration", "interval -1m0s is below the 1s minimum"},
		{"CRON_TZ=Mars/Olympus * * * * *", "time zone", "unknown time zone Mars/Olympus"},
		{"TZ=../etc/passwd * * * * *", "time zone", "time: invalid location name"},
		{"TZ=Local * * * * *", "time zone", "want an IANA name such as Europe/Berlin"},
		{"CRON_TZ= * * * * *", "time zone", "want an IANA name such as Europe/Berlin"},
		{"CRON_TZ=Europe/Berlin", "", "no schedule after the time zone prefix"},
		{"CRON_TZ=Europe/Berlin 61 * * * *", "minute", "value 61 out of range 0-59"},
	}
	for _, tc := range cases {
		t.Run(tc.spec, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(tc.spec, nil)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error", tc.spec, r)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) error %T %v, want *ParseError", tc.spec, err, err)
			}
			if pe.Spec != tc.spec || pe.Field != tc.field || pe.Reason != tc.reason {
				t.Errorf("Parse(%q) error = %+v\nwant Spec %q Field %q Reason %q", tc.spec, *pe, tc.spec, tc.field, tc.reason)
			}
			want := fmt.Sprintf("schedule: parse %q: %s", tc.spec, tc.reason)
			if tc.field != "" {
				want = fmt.Sprintf("schedule: parse %q: %s field %q: %s", tc.spec, tc.field, pe.Value, tc.reason)
			}
			if got := err.Error(); got != want {
				t.Errorf("Parse(%q).Error() = %q, want %q", tc.spec, got, want)
			}
		})
	}
}

func TestParseErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := Parse("61 * * * *", nil)
	want := `schedule: parse "61 * * * *": minute field "61": value 61 out of range 0-59`
	if err == nil || err.Error() != want {
		t.Errorf("Parse error = %v, want %s", err, want)
	}
	_, err = Parse("0 0 * mon *", nil)
	want = `schedule: parse "0 0 * mon *": month field "mon": invalid value "mon" (want 1-12 or JAN-DEC)`
	if err == nil || err.Error() != want {
		t.Errorf("Parse error = %v, want %s", err, want)
	}
}

func TestParseLocation(t *testing.T) {
	t.Parallel()
	berlin := mustLoc(t, "Europe/Berlin")
	from := mustTime(t, "2026-06-01T00:00:00Z")
	cases := []struct {
		name, spec string
		loc        *time.Location
		want       string
	}{
		{"nil is UTC", "0 12 * * *", nil, "2026-06-01T12:00:00Z"},
		{"loc argument", "0 12 * * *", berlin, "2026-06-01T10:00:00Z"},
		{"prefix overrides loc", "CRON_TZ=America/New_York 0 12 * * *", berlin, "2026-06-01T16:00:00Z"},
		{"TZ prefix", "TZ=Asia/Tokyo 0 12 * * *", nil, "2026-06-01T03:00:00Z"},
		{"macro with prefix", "CRON_TZ=Europe/Berlin @daily", nil, "2026-06-01T22:00:00Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := mustParse(t, tc.spec, tc.loc)
			if got := r.Next(from).UTC().Format(time.RFC3339); got != tc.want {
				t.Errorf("Parse(%q, %v).Next(%v) = %s, want %s", tc.spec, tc.loc, from, got, tc.want)
			}
		})
	}
}
