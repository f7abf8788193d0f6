package schedule

import (
	"testing"
	"time"
)

func TestNextCron(t *testing.T) {
	t.Parallel()
	runNextCases(t, []nextCase{
		{name: "every minute", spec: "* * * * *", from: "2026-01-01T00:00:30Z",
			want: []string{"2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z", "2026-01-01T00:03:00Z"}},
		{name: "strictly after a fire time", spec: "* * * * *", from: "2026-01-01T00:01:00Z",
			want: []string{"2026-01-01T00:02:00Z"}},
		{name: "sub-second start", spec: "* * * * *", from: "2026-01-01T00:00:59.999999999Z",
			want: []string{"2026-01-01T00:01:00Z"}},
		{name: "every five minutes", spec: "*/5 * * * *", from: "2026-01-01T00:03:00Z",
			want: []string{"2026-01-01T00:05:00Z", "2026-01-01T00:10:00Z", "2026-01-01T00:15:00Z"}},
		{name: "specific time", spec: "30 9 * * *", from: "2026-01-01T10:00:00Z",
			want: []string{"2026-01-02T09:30:00Z", "2026-01-03T09:30:00Z"}},
		{name: "specific date", spec: "15 14 1 7 *", from: "2026-01-01T00:00:00Z",
			want: []string{"2026-07-01T14:15:00Z", "2027-07-01T14:15:00Z"}},
		{name: "hour range", spec: "0 9-11 * * *", from: "2026-01-01T10:30:00Z",
			want: []string{"2026-01-01T11:00:00Z", "2026-01-02T09:00:00Z", "2026-01-02T10:00:00Z"}},
		{name: "range with step", spec: "10-30/10 8 * * *", from: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T08:10:00Z", "2026-01-01T08:20:00Z", "2026-01-01T08:30:00Z", "2026-01-02T08:10:00Z"}},
		{name: "start with step", spec: "5/20 * * * *", from: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T00:05:00Z", "2026-01-01T00:25:00Z", "2026-01-01T00:45:00Z", "2026-01-01T01:05:00Z"}},
		{name: "list", spec: "0,20,40 12 * * *", from: "2026-01-01T12:30:00Z",
			want: []string{"2026-01-01T12:40:00Z", "2026-01-02T12:00:00Z", "2026-01-02T12:20:00Z"}},
		{name: "day of month only", spec: "0 0 15 * *", from: "2026-01-15T00:00:00Z",
			want: []string{"2026-02-15T00:00:00Z", "2026-03-15T00:00:00Z"}},
		{name: "weekdays only", spec: "0 0 * * 1-5", from: "2026-01-01T12:00:00Z",
			want: []string{"2026-01-02T00:00:00Z", "2026-01-05T00:00:00Z", "2026-01-06T00:00:00Z"}},
		{name: "DOM or DOW", spec: "0 0 1 * MON", from: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z", "2026-01-19T00:00:00Z",
				"2026-01-26T00:00:00Z", "2026-02-01T00:00:00Z", "2026-02-02T00:00:00Z"}},
		{name: "DOM or DOW Friday 13th", spec: "0 0 13 * FRI", from: "2026-02-01T00:00:00Z",
			want: []string{"2026-02-06T00:00:00Z", "2026-02-13T00:00:00Z", "2026-02-20T00:00:00Z",
				"2026-02-27T00:00:00Z", "2026-03-06T00:00:00Z", "2026-03-13T00:00:00Z"}},
		{name: "starred DOM means DOM and DOW", spec: "0 0 */2 * MON", from: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-05T00:00:00Z", "2026-01-19T00:00:00Z", "2026-02-09T00:00:00Z", "2026-02-23T00:00:00Z"}},
		{name: "Feb 29 leap years only", spec: "0 0 29 2 *", from: "2026-01-01T00:00:00Z",
			want: []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z", "2036-02-29T00:00:00Z"}},
		{name: "Feb 29 across 2100", spec: "0 0 29 2 *", from: "2096-03-01T00:00:00Z",
			want: []string{"2104-02-29T00:00:00Z"}},
		{name: "Feb 29 in 2000", spec: "0 0 29 2 *", from: "1997-01-01T00:00:00Z",
			want: []string{"2000-02-29T00:00:00Z", "2004-02-29T00:00:00Z"}},
		{name: "month names", spec: "0 0 1 jan,JUL *", from: "2026-01-01T00:00:00Z",
			want: []string{"2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z", "2027-07-01T00:00:00Z"}},
		{name: "month name range", spec: "0 0 1 sep-Nov/1 *", from: "2026-01-01T00:00:00Z",
			want: []string{"2026-09-01T00:00:00Z", "2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z", "2027-09-01T00:00:00Z"}},
		{name: "weekday names", spec: "0 12 * * sat,SUN", from: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-03T12:00:00Z", "2026-01-04T12:00:00Z", "2026-01-10T12:00:00Z", "2026-01-11T12:00:00Z"}},
		{name: "weekday 7 is Sunday", spec: "0 0 * * 7", from: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-18T00:00:00Z"}},
		{name: "weekday range to 7", spec: "0 0 * * 5-7", from: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-09T00:00:00Z"}},
		{name: "six fields every 20 seconds", spec: "*/20 * * * * *", from: "2026-01-01T00:00:05Z",
			want: []string{"2026-01-01T00:00:20Z", "2026-01-01T00:00:40Z", "2026-01-01T00:01:00Z"}},
		{name: "six fields specific second", spec: "30 0 12 * * *", from: "2026-01-01T12:00:30Z",
			want: []string{"2026-01-02T12:00:30Z", "2026-01-03T12:00:30Z"}},
		{name: "six fields every second", spec: "* * * * * *", from: "2026-01-01T23:59:58.5Z",
			want: []string{"2026-01-01T23:59:59Z", "2026-01-02T00:00:00Z", "2026-01-02T00:00:01Z"}},
		{name: "yearly", spec: "@yearly", from: "2026-01-01T00:00:00Z",
			want: []string{"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"}},
		{name: "annually", spec: "@annually", from: "2026-06-01T00:00:00Z",
			want: []string{"2027-01-01T00:00:00Z"}},
		{name: "monthly", spec: "@monthly", from: "2026-01-31T00:00:00Z",
			want: []string{"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"}},
		{name: "weekly", spec: "@weekly", from: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"}},
		{name: "daily", spec: "@daily", from: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"}},
		{name: "midnight", spec: "@midnight", from: "2026-01-01T23:59:59Z",
			want: []string{"2026-01-02T00:00:00Z"}},
		{name: "hourly", spec: "@hourly", from: "2026-01-01T00:59:59Z",
			want: []string{"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"}},
		{name: "end of month 31", spec: "0 0 31 * *", from: "2026-01-31T12:00:00Z",
			want: []string{"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z", "2026-10-31T00:00:00Z"}},
		{name: "end of month 30 skips February", spec: "0 0 30 * *", from: "2026-01-30T12:00:00Z",
			want: []string{"2026-03-30T00:00:00Z", "2026-04-30T00:00:00Z"}},
		{name: "year rollover", spec: "0 0 1 1 *", from: "2026-12-31T23:59:59Z",
			want: []string{"2027-01-01T00:00:00Z"}},
		{name: "last minute of the year", spec: "59 23 31 12 *", from: "2026-12-31T23:59:00Z",
			want: []string{"2027-12-31T23:59:00Z"}},
		{name: "every second over new year", spec: "* * * * * *", from: "2026-12-31T23:59:59Z",
			want: []string{"2027-01-01T00:00:00Z"}},
		{name: "impossible Feb 30", spec: "0 0 30 2 *", from: "2026-01-01T00:00:00Z",
			want: []string{"zero"}},
		{name: "impossible 31st of short months", spec: "0 0 31 4,6,9,11 *", from: "2026-01-01T00:00:00Z",
			want: []string{"zero"}},
		{name: "location of the start time is irrelevant", spec: "0 12 * * *", from: "2026-01-01T12:30:00+09:00",
			want: []string{"2026-01-01T12:00:00Z"}},
		{name: "prefix zone", spec: "CRON_TZ=Asia/Kolkata 0 9 * * *", from: "2026-01-01T00:00:00Z",
			want: []string{"2026-01-01T03:30:00Z", "2026-01-02T03:30:00Z"}},
	})
}

func TestNextReturnsRuleLocation(t *testing.T) {
	t.Parallel()
	berlin := mustLoc(t, "Europe/Berlin")
	r := mustParse(t, "0 9 * * *", berlin)
	got := r.Next(mustTime(t, "2026-06-01T00:00:00Z"))
	if got.Location() != berlin || got.Format("2006-01-02 15:04 MST") != "2026-06-01 09:00 CEST" {
		t.Errorf("Next = %v in %v, want 2026-06-01 09:00 CEST in Europe/Berlin", got, got.Location())
	}
}

func TestNextExtremeTimes(t *testing.T) {
	t.Parallel()
	r := mustParse(t, "* * * * *", nil)
	cases := []struct {
		name string
		from time.Time
		zero bool
	}{
		{"zero time", time.Time{}, false},
		{"year 1 BC", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"year 9999", time.Date(9999, 12, 31, 23, 59, 30, 0, time.UTC), false},
		{"far future", time.Unix(1<<62, 0), true},
		{"far past", time.Unix(-1<<62, 0), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := r.Next(tc.from)
			if tc.zero != got.IsZero() || (!got.IsZero() && !got.After(tc.from)) {
				t.Errorf("Next(%v) = %v, want zero %v and after the start", tc.from, got, tc.zero)
			}
			if !tc.zero && got.Sub(tc.from) > time.Minute {
				t.Errorf("Next(%v) = %v, want within a minute", tc.from, got)
			}
		})
	}
}
