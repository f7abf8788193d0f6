package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
)

// TestScheduleJitter: a jittered schedule's jobs keep their ticks as fire
// times and start within the jitter after them (stable: the same delay
// every tick), never past the next tick.
func TestScheduleJitter(t *testing.T) {
	t.Parallel()
	for _, mode := range []hopper.JitterMode{hopper.JitterRandom, hopper.JitterStable} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ws := hopper.NewWorkers()
				var mu sync.Mutex
				var delays []time.Duration
				hopper.RegisterRaw(ws, "tick", func(ctx context.Context, _ json.RawMessage) (any, error) {
					j := hopper.JobFromContext(ctx)
					mu.Lock()
					delays = append(delays, time.Since(j.FireTime))
					mu.Unlock()
					return nil, nil
				}, nil)
				c := newClient(t, hopper.Config{Workers: ws})
				if _, err := c.AddSchedule(context.Background(), "s", hopper.ScheduleOptions{Every: time.Hour, Kind: "tick",
					Jitter: 20 * time.Minute, JitterMode: mode}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(24*time.Hour + 30*time.Minute)
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				if len(delays) != 24 {
					t.Fatalf("%d runs, want 24", len(delays))
				}
				distinct := map[time.Duration]bool{}
				for _, d := range delays {
					if d < 0 || d >= 20*time.Minute {
						t.Errorf("run %s after its tick, want within [0, 20m)", d)
					}
					distinct[d] = true
				}
				if mode == hopper.JitterStable && len(distinct) != 1 {
					t.Errorf("stable jitter: delays %v, want one", delays)
				}
				if mode == hopper.JitterRandom && len(distinct) < 20 {
					t.Errorf("random jitter: %d distinct delays of 24", len(distinct))
				}
			})
		})
	}
}

func TestAddScheduleJitterRefusesBadInput(t *testing.T) {
	t.Parallel()
	ws, _ := ticks(0)
	c := newClient(t, hopper.Config{Workers: ws})
	for _, tc := range []struct {
		o     hopper.ScheduleOptions
		field string
	}{
		{hopper.ScheduleOptions{Jitter: -time.Second}, "jitter"},
		{hopper.ScheduleOptions{Jitter: 25 * time.Hour}, "jitter"},
		{hopper.ScheduleOptions{JitterMode: hopper.JitterStable}, "jitter_mode"},
		{hopper.ScheduleOptions{Jitter: time.Minute, JitterMode: 5}, "jitter_mode"},
	} {
		tc.o.Kind, tc.o.Every = "tick", time.Hour
		_, err := c.AddSchedule(context.Background(), "s", tc.o)
		var fe *hopper.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%+v: %v, want a FieldError on %s", tc.o, err, tc.field)
		}
	}
}
