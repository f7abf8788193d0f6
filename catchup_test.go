package hopper_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/store/memstore"
)

// TestScheduleCatchUpPolicies: 3 hours of downtime on an every-minute
// schedule (180 missed ticks) gives 1 run (one, latest), 0 (none) or
// min(180, cap) within the window (all); firing again runs nothing more.
func TestScheduleCatchUpPolicies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		o     hopper.ScheduleOptions
		runs  int
		first time.Duration // fire time of the first run, from the start
	}{
		{"one", hopper.ScheduleOptions{}, 1, time.Minute},
		{"none", hopper.ScheduleOptions{CatchUp: hopper.CatchUpNone}, 0, 0},
		{"latest", hopper.ScheduleOptions{CatchUp: hopper.CatchUpLatest}, 1, 180 * time.Minute},
		{"all", hopper.ScheduleOptions{CatchUp: hopper.CatchUpAll, CatchUpMax: 500}, 180, time.Minute},
		{"all over the cap", hopper.ScheduleOptions{CatchUp: hopper.CatchUpAll, CatchUpMax: 50}, 50, 131 * time.Minute},
		{"all by default", hopper.ScheduleOptions{CatchUp: hopper.CatchUpAll}, 100, 81 * time.Minute},
		{"all within a window", hopper.ScheduleOptions{CatchUp: hopper.CatchUpAll, CatchUpWindow: time.Hour, CatchUpMax: 500}, 60, 121 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				start := time.Now()
				st := memstore.New()
				ws, _ := ticks(0)
				o := tc.o
				o.Every, o.Kind = time.Minute, "tick"
				clients := make([]*hopper.Client, 3) // three processes sharing the store, none started
				for i := range clients {
					c, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws, Logger: quiet})
					if err != nil {
						t.Fatal(err)
					}
					clients[i] = c
				}
				if _, err := clients[0].AddSchedule(ctx, "s", o); err != nil {
					t.Fatal(err)
				}
				time.Sleep(3*time.Hour + 30*time.Second) // nobody fired: 180 ticks missed
				// The three fire at once, twice: each tick runs once.
				var wg sync.WaitGroup
				for range 2 {
					for _, c := range clients {
						wg.Go(func() { c.FireSchedules(ctx, time.Now()) })
					}
				}
				wg.Wait()
				jobs, err := clients[0].List(ctx, hopper.ListOptions{Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				if len(jobs) != tc.runs {
					t.Fatalf("%d runs, want %d", len(jobs), tc.runs)
				}
				seen := map[time.Time]bool{}
				for i, j := range jobs {
					if seen[j.FireTime] {
						t.Errorf("tick %v ran twice", j.FireTime.Sub(start))
					}
					seen[j.FireTime] = true
					if want := start.Add(tc.first + time.Duration(i)*time.Minute); !j.FireTime.Equal(want) {
						t.Errorf("run %d: tick %v, want %v", i, j.FireTime.Sub(start), want.Sub(start))
					}
				}
				sc, err := clients[0].GetSchedule(ctx, "s")
				if err != nil {
					t.Fatal(err)
				}
				if want := start.Add(181 * time.Minute); !sc.NextRunAt.Equal(want) {
					t.Errorf("next run %v, want %v", sc.NextRunAt.Sub(start), want.Sub(start))
				}
			})
		})
	}
}

func TestAddScheduleCatchUpRefusesBadInput(t *testing.T) {
	t.Parallel()
	ws, _ := ticks(0)
	c := newClient(t, hopper.Config{Workers: ws})
	for _, tc := range []struct {
		o     hopper.ScheduleOptions
		field string
	}{
		{hopper.ScheduleOptions{Every: time.Minute, CatchUp: 9}, "catch_up"},
		{hopper.ScheduleOptions{Every: time.Minute, FixedDelay: true, CatchUp: hopper.CatchUpAll}, "catch_up"},
		{hopper.ScheduleOptions{Every: time.Minute, CatchUpMax: 5}, "catch_up_max"},
		{hopper.ScheduleOptions{Every: time.Minute, CatchUp: hopper.CatchUpLatest, CatchUpWindow: time.Hour}, "catch_up_window"},
		{hopper.ScheduleOptions{Every: time.Minute, CatchUp: hopper.CatchUpAll, CatchUpWindow: 8 * 24 * time.Hour}, "catch_up_window"},
		{hopper.ScheduleOptions{Every: time.Minute, CatchUp: hopper.CatchUpAll, CatchUpWindow: -time.Hour}, "catch_up_window"},
		{hopper.ScheduleOptions{Every: time.Minute, CatchUp: hopper.CatchUpAll, CatchUpMax: 10_001}, "catch_up_max"},
	} {
		tc.o.Kind = "tick"
		_, err := c.AddSchedule(context.Background(), "s", tc.o)
		var fe *hopper.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%+v: %v, want a FieldError on %s", tc.o, err, tc.field)
		}
	}
	if scs, _ := c.Schedules(context.Background()); len(scs) != 0 {
		t.Errorf("refused schedules stored: %d", len(scs))
	}
}
