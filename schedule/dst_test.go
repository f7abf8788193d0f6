package schedule

import "testing"

// Europe/Berlin 2026: spring forward on 03-29 at 01:00Z (02:00 CET -> 03:00
// CEST, so 02:00-03:00 does not exist); fall back on 10-25 at 01:00Z (03:00
// CEST -> 02:00 CET, so 02:00-03:00 happens twice: 00:00Z-01:00Z in CEST,
// then 01:00Z-02:00Z in CET). CET is UTC+1, CEST is UTC+2.
func TestNextDSTBerlin(t *testing.T) {
	t.Parallel()
	const loc = "Europe/Berlin"
	runNextCases(t, []nextCase{
		// Spring forward.
		{name: "gap time fires at the end of the gap", spec: "30 2 * * *", loc: loc, from: "2026-03-28T00:00:00Z",
			want: []string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{name: "gap times collapse into one firing", spec: "*/15 2 * * *", loc: loc, from: "2026-03-28T12:00:00Z",
			want: []string{"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "2026-03-30T00:15:00Z",
				"2026-03-30T00:30:00Z", "2026-03-30T00:45:00Z", "2026-03-31T00:00:00Z"}},
		{name: "six-field gap time", spec: "0 30 2 * * *", loc: loc, from: "2026-03-28T12:00:00Z",
			want: []string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{name: "first time after the gap", spec: "0 3 * * *", loc: loc, from: "2026-03-28T12:00:00Z",
			want: []string{"2026-03-29T01:00:00Z", "2026-03-30T01:00:00Z"}},
		{name: "gap and gap end share one firing", spec: "0,30 2,3 * * *", loc: loc, from: "2026-03-28T12:00:00Z",
			want: []string{"2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z",
				"2026-03-30T00:00:00Z", "2026-03-30T00:30:00Z", "2026-03-30T01:00:00Z"}},
		{name: "every minute over the gap", spec: "* * * * *", loc: loc, from: "2026-03-29T00:58:00Z",
			want: []string{"2026-03-29T00:59:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:01:00Z"}},
		{name: "hourly over the gap", spec: "@hourly", loc: loc, from: "2026-03-28T23:30:00Z",
			want: []string{"2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},
		{name: "time before the gap", spec: "15 1 * * *", loc: loc, from: "2026-03-28T12:00:00Z",
			want: []string{"2026-03-29T00:15:00Z", "2026-03-29T23:15:00Z"}},
		{name: "start at the gap end", spec: "30 2 * * *", loc: loc, from: "2026-03-29T01:00:00Z",
			want: []string{"2026-03-30T00:30:00Z"}},
		{name: "start just before the gap", spec: "30 2 * * *", loc: loc, from: "2026-03-29T00:59:59.9Z",
			want: []string{"2026-03-29T01:00:00Z"}},
		{name: "every is a pure duration in spring", spec: "@every 1h", loc: loc, from: "2026-03-29T00:00:00Z",
			want: []string{"2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},
		// Fall back.
		{name: "repeated time fires once in CEST", spec: "30 2 * * *", loc: loc, from: "2026-10-24T12:00:00Z",
			want: []string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{name: "repeated hour fires in the first pass only", spec: "*/15 2 * * *", loc: loc, from: "2026-10-24T12:00:00Z",
			want: []string{"2026-10-25T00:00:00Z", "2026-10-25T00:15:00Z", "2026-10-25T00:30:00Z",
				"2026-10-25T00:45:00Z", "2026-10-26T01:00:00Z"}},
		{name: "every 15 minutes over the repeated hour", spec: "*/15 * * * *", loc: loc, from: "2026-10-24T23:30:00Z",
			want: []string{"2026-10-24T23:45:00Z", "2026-10-25T00:00:00Z", "2026-10-25T00:15:00Z",
				"2026-10-25T00:30:00Z", "2026-10-25T00:45:00Z", "2026-10-25T02:00:00Z", "2026-10-25T02:15:00Z"}},
		{name: "hourly over the repeated hour", spec: "@hourly", loc: loc, from: "2026-10-24T22:30:00Z",
			want: []string{"2026-10-24T23:00:00Z", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z"}},
		{name: "every minute over the repeated hour", spec: "* * * * *", loc: loc, from: "2026-10-25T00:58:00Z",
			want: []string{"2026-10-25T00:59:00Z", "2026-10-25T02:00:00Z", "2026-10-25T02:01:00Z"}},
		{name: "start in the second pass", spec: "*/15 * * * *", loc: loc, from: "2026-10-25T01:10:00Z",
			want: []string{"2026-10-25T02:00:00Z", "2026-10-25T02:15:00Z"}},
		{name: "start in the second pass, specific time", spec: "30 2 * * *", loc: loc, from: "2026-10-25T01:10:00Z",
			want: []string{"2026-10-26T01:30:00Z"}},
		{name: "start at the fall-back instant", spec: "* * * * * *", loc: loc, from: "2026-10-25T01:00:00Z",
			want: []string{"2026-10-25T02:00:00Z", "2026-10-25T02:00:01Z"}},
		{name: "time after the repeated hour", spec: "0 3 * * *", loc: loc, from: "2026-10-24T12:00:00Z",
			want: []string{"2026-10-25T02:00:00Z", "2026-10-26T02:00:00Z"}},
		{name: "every is a pure duration in autumn", spec: "@every 30m", loc: loc, from: "2026-10-25T00:00:00Z",
			want: []string{"2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z"}},
		{name: "weekdays at 02:00 over spring forward", spec: "0 2 * * MON-FRI", loc: loc, from: "2026-03-26T12:00:00Z",
			want: []string{"2026-03-27T01:00:00Z", "2026-03-30T00:00:00Z", "2026-03-31T00:00:00Z"}},
	})
}

// America/New_York 2026: spring forward on 03-08 at 07:00Z (02:00 EST ->
// 03:00 EDT); fall back on 11-01 at 06:00Z (02:00 EDT -> 01:00 EST, so
// 01:00-02:00 happens twice: 05:00Z-06:00Z in EDT, then 06:00Z-07:00Z in
// EST). EST is UTC-5, EDT is UTC-4.
func TestNextDSTNewYork(t *testing.T) {
	t.Parallel()
	const loc = "America/New_York"
	runNextCases(t, []nextCase{
		// Spring forward.
		{name: "gap time fires at the end of the gap", spec: "30 2 * * *", loc: loc, from: "2026-03-07T12:00:00Z",
			want: []string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{name: "gap times collapse into one firing", spec: "*/15 2 * * *", loc: loc, from: "2026-03-07T12:00:00Z",
			want: []string{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z", "2026-03-09T06:15:00Z"}},
		{name: "hourly over the gap", spec: "0 * * * *", loc: loc, from: "2026-03-08T05:30:00Z",
			want: []string{"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
		{name: "every minute over the gap", spec: "* * * * *", loc: loc, from: "2026-03-08T06:58:00Z",
			want: []string{"2026-03-08T06:59:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:01:00Z"}},
		{name: "gap and gap end share one firing", spec: "0 2,3 * * *", loc: loc, from: "2026-03-07T12:00:00Z",
			want: []string{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z", "2026-03-09T07:00:00Z"}},
		// Fall back.
		{name: "repeated time fires once in EDT", spec: "30 1 * * *", loc: loc, from: "2026-10-31T12:00:00Z",
			want: []string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{name: "repeated hour fires in the first pass only", spec: "*/20 1 * * *", loc: loc, from: "2026-10-31T12:00:00Z",
			want: []string{"2026-11-01T05:00:00Z", "2026-11-01T05:20:00Z", "2026-11-01T05:40:00Z", "2026-11-02T06:00:00Z"}},
		{name: "hourly over the repeated hour", spec: "0 * * * *", loc: loc, from: "2026-11-01T03:30:00Z",
			want: []string{"2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z"}},
		{name: "every 30 minutes over the repeated hour", spec: "*/30 * * * *", loc: loc, from: "2026-11-01T05:45:00Z",
			want: []string{"2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z"}},
		{name: "start in the second pass", spec: "*/30 * * * *", loc: loc, from: "2026-11-01T06:10:00Z",
			want: []string{"2026-11-01T07:00:00Z"}},
		{name: "start in the second pass, specific time", spec: "30 1 * * *", loc: loc, from: "2026-11-01T06:10:00Z",
			want: []string{"2026-11-02T06:30:00Z"}},
		{name: "time after the repeated hour", spec: "0 2 * * *", loc: loc, from: "2026-10-31T12:00:00Z",
			want: []string{"2026-11-01T07:00:00Z", "2026-11-02T07:00:00Z"}},
		{name: "start of the repeated hour", spec: "0 1 * * *", loc: loc, from: "2026-10-31T12:00:00Z",
			want: []string{"2026-11-01T05:00:00Z", "2026-11-02T06:00:00Z"}},
		{name: "every is a pure duration", spec: "@every 1h", loc: loc, from: "2026-11-01T04:00:00Z",
			want: []string{"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}},
		{name: "prefix zone", spec: "CRON_TZ=America/New_York 30 2 * * *", from: "2026-03-07T12:00:00Z",
			want: []string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
	})
}

// Australia/Lord_Howe shifts by 30 minutes (+10:30 <-> +11): 2026-04-05
// 02:00 (+11) -> 01:30 (+10:30) at 15:00Z on 04-04; 2026-10-04 02:00
// (+10:30) -> 02:30 (+11) at 15:30Z on 10-03.
func TestNextDSTHalfHour(t *testing.T) {
	t.Parallel()
	const loc = "Australia/Lord_Howe"
	runNextCases(t, []nextCase{
		{name: "half-hour gap", spec: "*/10 2 * * *", loc: loc, from: "2026-10-03T12:00:00Z",
			want: []string{"2026-10-03T15:30:00Z", "2026-10-03T15:40:00Z", "2026-10-03T15:50:00Z", "2026-10-04T15:00:00Z"}},
		{name: "half-hour repeat", spec: "*/20 1 * * *", loc: loc, from: "2026-04-04T12:00:00Z",
			want: []string{"2026-04-04T14:00:00Z", "2026-04-04T14:20:00Z", "2026-04-04T14:40:00Z", "2026-04-05T14:30:00Z"}},
	})
}
