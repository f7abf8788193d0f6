package hopper_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// ticks registers kind "tick" recording each run's fire time (relative to
// start) and taking d to run.
func ticks(d time.Duration) (*hopper.Workers, func() []time.Duration) {
	ws := hopper.NewWorkers()
	var mu sync.Mutex
	var fired []time.Duration
	start := time.Now()
	hopper.RegisterRaw(ws, "tick", func(ctx context.Context, _ json.RawMessage) (any, error) {
		mu.Lock()
		fired = append(fired, hopper.JobFromContext(ctx).FireTime.Sub(start))
		mu.Unlock()
		time.Sleep(d)
		return nil, nil
	}, nil)
	return ws, func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), fired...)
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestScheduleOverlapSkipSkipsTicksWhileRunning(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws, fired := ticks(90 * time.Second)
		c := newClient(t, hopper.Config{Workers: ws})
		if _, err := c.AddSchedule(context.Background(), "s", hopper.ScheduleOptions{Every: time.Minute, Kind: "tick"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5*time.Minute + time.Second)
		// 1m runs until 2m30: the 2m tick is skipped; 3m runs until 4m30; 4m skipped; 5m runs.
		want := []time.Duration{time.Minute, 3 * time.Minute, 5 * time.Minute}
		if got := fired(); !equalDurations(got, want) {
			t.Errorf("fired at %v, want %v", got, want)
		}
	})
}

func TestScheduleOverlapAllowFiresEveryTick(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws, fired := ticks(90 * time.Second)
		c := newClient(t, hopper.Config{Workers: ws})
		c.AddSchedule(context.Background(), "s", hopper.ScheduleOptions{Every: time.Minute, Kind: "tick", Overlap: hopper.OverlapAllow})
		time.Sleep(3*time.Minute + time.Second)
		want := []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute}
		if got := fired(); !equalDurations(got, want) {
			t.Errorf("fired at %v, want %v", got, want)
		}
	})
}

func TestSchedulePauseResumeDoesNotReplayMissedTicks(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ws, fired := ticks(0)
		c := newClient(t, hopper.Config{Workers: ws})
		c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Minute, Kind: "tick"})
		time.Sleep(time.Minute + time.Second)
		if err := c.PauseSchedule(ctx, "s"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Minute) // now 6m01
		if err := c.ResumeSchedule(ctx, "s"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute) // now 7m01
		want := []time.Duration{time.Minute, 7 * time.Minute}
		if got := fired(); !equalDurations(got, want) {
			t.Errorf("fired at %v, want %v", got, want)
		}
		if err := c.RemoveSchedule(ctx, "s"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetSchedule(ctx, "s"); err == nil {
			t.Error("GetSchedule after RemoveSchedule: want ErrNotFound")
		}
	})
}

// Ticks missed while no process ran fire once, not once per missed tick.
func TestScheduleCatchUpRunsOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memstore.New()
		ws, fired := ticks(0)
		off, _ := hopper.NewClient(hopper.Config{Store: st, Logger: quiet})
		off.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Minute, Kind: "tick"})
		time.Sleep(10*time.Minute + 30*time.Second) // down for 10 ticks
		newClient(t, hopper.Config{Store: st, Workers: ws})
		time.Sleep(time.Minute)
		// The missed 1m tick fires once on start; then 11m.
		want := []time.Duration{time.Minute, 11 * time.Minute}
		if got := fired(); !equalDurations(got, want) {
			t.Errorf("fired at %v, want %v", got, want)
		}
	})
}

// Two clients sharing a store never fire the same tick twice.
func TestScheduleTickFiresOnceAcrossClients(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		var runs atomic.Int64
		mk := func() *hopper.Client {
			ws := hopper.NewWorkers()
			hopper.RegisterRaw(ws, "tick", func(ctx context.Context, _ json.RawMessage) (any, error) {
				runs.Add(1)
				return nil, nil
			}, nil)
			return newClient(t, hopper.Config{Store: st, Workers: ws})
		}
		a, _ := mk(), mk()
		a.AddSchedule(context.Background(), "s", hopper.ScheduleOptions{Every: time.Second, Kind: "tick"})
		time.Sleep(100*time.Second + time.Millisecond)
		if got := runs.Load(); got != 100 {
			t.Errorf("100 ticks ran %d times", got)
		}
		jobs, _ := st.List(context.Background(), store.ListParams{Limit: 1000})
		seen := map[time.Time]bool{}
		for _, j := range jobs {
			if seen[j.FireTime] {
				t.Fatalf("tick %v fired twice", j.FireTime)
			}
			seen[j.FireTime] = true
		}
	})
}

// A cron schedule in Europe/Berlin across the spring-forward gap: 02:30
// does not exist on 2026-03-29, so that day's run happens once at 03:00.
func TestScheduleCronAcrossDST(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "report", func(ctx context.Context, _ json.RawMessage) (any, error) { return nil, nil }, nil)
	st := memstore.New()
	c, _ := hopper.NewClient(hopper.Config{Store: st, Workers: ws, Logger: quiet})
	sc, err := c.AddSchedule(ctx, "nightly", hopper.ScheduleOptions{Cron: "30 2 * * *", TimeZone: "Europe/Berlin", Kind: "report"})
	if err != nil {
		t.Fatal(err)
	}
	if loc := sc.NextRunAt.Location(); loc != time.UTC {
		t.Errorf("AddSchedule's NextRunAt is in %v, want UTC as the store returns it", loc)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	// Step from 2026-03-27 through 2026-03-31, one simulated minute at a time.
	at := time.Date(2026, 3, 27, 0, 0, 0, 0, berlin)
	// AddSchedule computed NextRunAt from the real clock; move it into the test window.
	st.UpdateSchedule(ctx, store.UpdateScheduleParams{Name: "nightly", SetNext: true, IfNext: sc.NextRunAt, Next: time.Date(2026, 3, 27, 2, 30, 0, 0, berlin)})
	var got []string
	for ; at.Before(time.Date(2026, 3, 31, 0, 0, 0, 0, berlin)); at = at.Add(time.Minute) {
		c.FireSchedules(ctx, at)
		if j, ok, _ := c.ProcessNext(ctx, at); ok {
			got = append(got, j.FireTime.In(berlin).Format("01-02 15:04 MST"))
		}
	}
	want := []string{"03-27 02:30 CET", "03-28 02:30 CET", "03-29 03:00 CEST", "03-30 02:30 CEST"}
	if len(got) != len(want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("firing %d: got %s, want %s", i, got[i], want[i])
		}
	}
}

func TestAddScheduleRejectsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := hopper.NewClient(hopper.Config{Logger: quiet})
	for _, tc := range []struct {
		name  string
		o     hopper.ScheduleOptions
		field string
	}{
		{"x", hopper.ScheduleOptions{Kind: "k"}, "cron"},
		{"x", hopper.ScheduleOptions{Kind: "k", Cron: "* * *"}, "spec"},
		{"x", hopper.ScheduleOptions{Kind: "k", Cron: "0 9 * * *", TimeZone: "Mars/Olympus"}, "time_zone"},
		{"x", hopper.ScheduleOptions{Kind: "k", Cron: "0 9 * * *", TimeZone: "Local"}, "time_zone"},
		{"x", hopper.ScheduleOptions{Kind: "k", Cron: "0 9 * * *", Every: time.Minute}, "cron"},
		{"x", hopper.ScheduleOptions{Kind: "k", Every: time.Millisecond}, "every"},
		// The expression's own zone and another: it would fire in the first
		// and be shown in the second. @every keeps no zone.
		{"x", hopper.ScheduleOptions{Kind: "k", Cron: "TZ=Europe/Paris 0 9 * * *", TimeZone: "America/New_York"}, "time_zone"},
		{"x", hopper.ScheduleOptions{Kind: "k", Cron: "@every 1h", TimeZone: "America/New_York"}, "time_zone"},
		{"x", hopper.ScheduleOptions{Cron: "@daily"}, "kind"},
		{"", hopper.ScheduleOptions{Kind: "k", Cron: "@daily"}, "name"},
	} {
		_, err := c.AddSchedule(ctx, tc.name, tc.o)
		fe, ok := err.(*hopper.FieldError)
		if !ok || fe.Field != tc.field {
			t.Errorf("AddSchedule(%q, %+v): got %v, want a FieldError on %s", tc.name, tc.o, err, tc.field)
		}
	}
	if _, err := c.AddSchedule(ctx, "d", hopper.ScheduleOptions{Kind: "k", Cron: "@daily"}); err != nil {
		t.Fatal(err)
	}
	// The expression's zone alone, or given twice alike, is the schedule's.
	for name, tz := range map[string]string{"paris": "", "paris2": "Europe/Paris"} {
		sc, err := c.AddSchedule(ctx, name, hopper.ScheduleOptions{Kind: "k", Cron: "CRON_TZ=Europe/Paris 0 9 * * *", TimeZone: tz})
		if err != nil || sc.TimeZone != "Europe/Paris" {
			t.Errorf("AddSchedule(%s, time zone %q): %v, %+v; want time zone Europe/Paris", name, tz, err, sc)
		}
	}
	if _, err := c.AddSchedule(ctx, "d", hopper.ScheduleOptions{Kind: "k", Cron: "@daily"}); err == nil {
		t.Error("duplicate schedule name: want ErrDuplicate")
	}
	if _, err := c.AddSchedule(ctx, "d", hopper.ScheduleOptions{Kind: "k", Cron: "@hourly", Replace: true}); err != nil {
		t.Errorf("Replace: %v", err)
	}
}
