package schedule_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/hopperq/hopper/schedule"
)

// Weekdays at 02:00 Berlin time. The weekend of 2026-03-29 switches to
// summer time, so the fire times move from UTC+1 to UTC+2.
func ExampleParse() {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(err)
	}
	rule, err := schedule.Parse("0 2 * * MON-FRI", berlin)
	if err != nil {
		panic(err)
	}
	t := time.Date(2026, 3, 26, 12, 0, 0, 0, time.UTC) // a Thursday
	for range 3 {
		t = rule.Next(t)
		fmt.Println(t.Format("Mon 2006-01-02 15:04 MST"), "=", t.UTC().Format(time.RFC3339))
	}
	// Output:
	// Fri 2026-03-27 02:00 CET = 2026-03-27T01:00:00Z
	// Mon 2026-03-30 02:00 CEST = 2026-03-30T00:00:00Z
	// Tue 2026-03-31 02:00 CEST = 2026-03-31T00:00:00Z
}

// A wall-clock time that does not exist fires once, when the gap ends; a
// repeated one fires once, at its first occurrence.
func ExampleParse_daylightSaving() {
	rule, err := schedule.Parse("CRON_TZ=Europe/Berlin 30 2 * * *", nil)
	if err != nil {
		panic(err)
	}
	for _, day := range []string{"2026-03-28T12:00:00Z", "2026-10-24T12:00:00Z"} {
		t, _ := time.Parse(time.RFC3339, day)
		for range 2 {
			t = rule.Next(t)
			fmt.Println(t.Format("2006-01-02 15:04 MST"))
		}
	}
	// Output:
	// 2026-03-29 03:00 CEST
	// 2026-03-30 02:30 CEST
	// 2026-10-25 02:30 CEST
	// 2026-10-26 02:30 CET
}

func ExampleParse_error() {
	_, err := schedule.Parse("61 * * * *", nil)
	var pe *schedule.ParseError
	if errors.As(err, &pe) {
		fmt.Printf("field=%s value=%s reason=%s\n", pe.Field, pe.Value, pe.Reason)
	}
	fmt.Println(err)
	// Output:
	// field=minute value=61 reason=value 61 out of range 0-59
	// schedule: parse "61 * * * *": minute field "61": value 61 out of range 0-59
}

// Every 90 minutes with the cadence anchored at 09:00: missed ticks are
// skipped, never replayed.
func ExampleEvery() {
	anchor := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	rule, err := schedule.Every(90*time.Minute, anchor)
	if err != nil {
		panic(err)
	}
	fmt.Println(rule)
	t := time.Date(2026, 1, 1, 12, 10, 0, 0, time.UTC)
	for range 3 {
		t = rule.Next(t)
		fmt.Println(t.Format("2006-01-02 15:04"))
	}
	// Output:
	// @every 1h30m0s
	// 2026-01-01 13:30
	// 2026-01-01 15:00
	// 2026-01-01 16:30
}
