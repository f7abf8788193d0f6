package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
)

// TestBackfillScheduleBufferAll: a backfill of four past ticks of a
// buffer-all schedule fires the first and runs the others in order, one at
// a time, each when the one before finished (fake clock, which starts at
// 2000-01-01); a second backfill of the range creates nothing.
func TestBackfillScheduleBufferAll(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		start := time.Now()
		ws := hopper.NewWorkers()
		var mu sync.Mutex
		var ticks []time.Time
		var started []time.Duration
		hopper.RegisterRaw(ws, "tick", func(ctx context.Context, _ json.RawMessage) (any, error) {
			mu.Lock()
			ticks = append(ticks, hopper.JobFromContext(ctx).FireTime)
			started = append(started, time.Since(start))
			mu.Unlock()
			time.Sleep(90 * time.Second)
			return nil, nil
		}, nil)
		c := newClient(t, hopper.Config{Workers: ws, Concurrency: 4})
		if _, err := c.AddSchedule(ctx, "monthly", hopper.ScheduleOptions{Cron: "0 0 15 * *", Kind: "tick", Overlap: hopper.OverlapBufferAll}); err != nil {
			t.Fatal(err)
		}
		from, to := time.Date(1999, 9, 1, 0, 0, 0, 0, time.UTC), time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC)
		res, err := c.BackfillSchedule(ctx, "monthly", from, to)
		if err != nil {
			t.Fatal(err)
		}
		if res.Ticks != 4 || len(res.Fired) != 1 || res.Buffered != 3 || res.Existed != 0 || res.Skipped != 0 {
			t.Errorf("backfill: %+v, want 4 ticks, 1 fired, 3 buffered", res)
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		mu.Lock()
		want := []time.Time{time.Date(1999, 9, 15, 0, 0, 0, 0, time.UTC), time.Date(1999, 10, 15, 0, 0, 0, 0, time.UTC),
			time.Date(1999, 11, 15, 0, 0, 0, 0, time.UTC), time.Date(1999, 12, 15, 0, 0, 0, 0, time.UTC)}
		if !slices.EqualFunc(ticks, want, time.Time.Equal) {
			t.Errorf("ran the ticks %v, want %v in order", ticks, want)
		}
		if !equalDurations(started, []time.Duration{0, 90 * time.Second, 180 * time.Second, 270 * time.Second}) {
			t.Errorf("runs started at %v, want one after the other, each when the one before ended", started)
		}
		mu.Unlock()
		again, err := c.BackfillSchedule(ctx, "monthly", from, to)
		if err != nil || again.Ticks != 4 || again.Existed != 4 || len(again.Fired) != 0 {
			t.Errorf("second backfill: %+v, %v; want the 4 ticks existing, nothing fired", again, err)
		}
		if sc, _ := c.GetSchedule(ctx, "monthly"); !sc.NextRunAt.Equal(time.Date(2000, 1, 15, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("next run after backfills: %v, want unmoved", sc.NextRunAt)
		}
	})
}

// TestBackfillSchedulePolicies: with allow every tick fires; with skip one
// fires and the rest are skipped while it waits; the catch-up cap keeps the
// latest ticks; bad ranges are FieldErrors.
func TestBackfillSchedulePolicies(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ws, _ := ticks(0)
		c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: quiet}) // not started: jobs stay available
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.StopNow() })
		for name, o := range map[string]hopper.Overlap{"allow": hopper.OverlapAllow, "skip": hopper.OverlapSkip} {
			if _, err := c.AddSchedule(ctx, name, hopper.ScheduleOptions{Cron: "0 * * * *", Kind: "tick", Overlap: o}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.AddSchedule(ctx, "seconds", hopper.ScheduleOptions{Cron: "* * * * * *", Kind: "tick", Overlap: hopper.OverlapAllow}); err != nil {
			t.Fatal(err)
		}
		if err := c.PauseSchedule(ctx, "allow"); err != nil { // a paused schedule is backfilled too
			t.Fatal(err)
		}
		day := time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC)
		res, err := c.BackfillSchedule(ctx, "allow", day.Add(20*time.Hour), day.Add(23*time.Hour))
		if err != nil || res.Ticks != 4 || len(res.Fired) != 4 {
			t.Errorf("allow: %+v, %v; want 4 ticks fired", res, err)
		}
		res, err = c.BackfillSchedule(ctx, "skip", day.Add(20*time.Hour), day.Add(23*time.Hour))
		if err != nil || res.Ticks != 4 || len(res.Fired) != 1 || res.Skipped != 3 {
			t.Errorf("skip: %+v, %v; want 1 fired, 3 skipped", res, err)
		}
		res, err = c.BackfillSchedule(ctx, "seconds", day.Add(23*time.Hour+50*time.Minute), day.Add(24*time.Hour-time.Second))
		if err != nil || res.Ticks != 600 || len(res.Fired) != 100 || res.OverCap != 500 {
			t.Errorf("over the cap: %v fired, %+v, %v; want the latest 100 of 600", len(res.Fired), res.OverCap, err)
		}
		if len(res.Fired) > 0 {
			if j, _ := c.Get(ctx, res.Fired[0]); !j.FireTime.Equal(day.Add(23*time.Hour + 58*time.Minute + 20*time.Second)) {
				t.Errorf("first tick run over the cap: %v, want the 100th before the end", j.FireTime)
			}
		}
		for _, tc := range []struct {
			from, to time.Time
			field    string
		}{
			{day.Add(time.Hour), day, "from"},
			{day, time.Now().Add(time.Hour), "to"},
			{time.Time{}, day, "from"},
		} {
			_, err := c.BackfillSchedule(ctx, "allow", tc.from, tc.to)
			var fe *hopper.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Errorf("backfill %v to %v: %v, want a FieldError on %s", tc.from, tc.to, err, tc.field)
			}
		}
		if _, err := c.BackfillSchedule(ctx, "nope", day, day); !errors.Is(err, hopper.ErrNotFound) {
			t.Errorf("unknown schedule: %v, want ErrNotFound", err)
		}
	})
}
