package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
)

// TestScheduleOverlapPolicies: each overlap policy with runs shorter and
// longer than the period (every minute, for 5m1s, fake clock): which ticks
// fire, and how the jobs end.
func TestScheduleOverlapPolicies(t *testing.T) {
	t.Parallel()
	type want struct {
		fired             []time.Duration // fire times of the jobs run, from the start
		completed, cancel int             // jobs completed, cancelled
	}
	for _, tc := range []struct {
		overlap hopper.Overlap
		run     time.Duration
		want    want
	}{
		{hopper.OverlapSkip, 30 * time.Second, want{fired: mins(1, 2, 3, 4, 5), completed: 4}},
		{hopper.OverlapSkip, 90 * time.Second, want{fired: mins(1, 3, 5), completed: 2}},
		{hopper.OverlapAllow, 30 * time.Second, want{fired: mins(1, 2, 3, 4, 5), completed: 4}},
		{hopper.OverlapAllow, 90 * time.Second, want{fired: mins(1, 2, 3, 4, 5), completed: 3}},
		{hopper.OverlapCancel, 30 * time.Second, want{fired: mins(1, 2, 3, 4, 5), completed: 4}},
		// Each tick cancels the run before it, which never finishes.
		{hopper.OverlapCancel, 90 * time.Second, want{fired: mins(1, 2, 3, 4, 5), cancel: 4}},
	} {
		t.Run(fmt.Sprintf("%s/%s", tc.overlap, tc.run), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				start := time.Now()
				ws := hopper.NewWorkers()
				var mu sync.Mutex
				var fired []time.Duration
				hopper.RegisterRaw(ws, "tick", func(ctx context.Context, _ json.RawMessage) (any, error) {
					mu.Lock()
					fired = append(fired, hopper.JobFromContext(ctx).FireTime.Sub(start))
					mu.Unlock()
					select {
					case <-time.After(tc.run):
						return nil, nil
					case <-ctx.Done():
						return nil, context.Cause(ctx)
					}
				}, nil)
				c := newClient(t, hopper.Config{Workers: ws, Concurrency: 4})
				if _, err := c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Minute, Kind: "tick", Overlap: tc.overlap,
					Options: &hopper.EnqueueOptions{Timeout: time.Hour, MaxAttempts: 1}}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(5*time.Minute + time.Second)
				synctest.Wait()
				slices.Sort(fired)
				if !equalDurations(fired, tc.want.fired) {
					t.Errorf("fired at %v, want %v", fired, tc.want.fired)
				}
				count := func(st hopper.State) int {
					n, err := c.Count(ctx, hopper.ListOptions{States: []hopper.State{st}})
					if err != nil {
						t.Fatal(err)
					}
					return n
				}
				if got := count(hopper.StateCompleted); got != tc.want.completed {
					t.Errorf("%d completed, want %d", got, tc.want.completed)
				}
				if got := count(hopper.StateCancelled); got != tc.want.cancel {
					t.Errorf("%d cancelled, want %d", got, tc.want.cancel)
				}
			})
		})
	}
}

func mins(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Minute
	}
	return out
}

// TestScheduleOverlapCancel: a tick of an OverlapCancel schedule cancels
// its previous job at the tick itself, whether running (its handler's
// context is cancelled) or still waiting; a run now does the same.
func TestScheduleOverlapCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "tick", func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}, nil)
		c := newClient(t, hopper.Config{Workers: ws})
		if _, err := c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Minute, Kind: "tick", Overlap: hopper.OverlapCancel}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute + time.Second)
		sc, _ := c.GetSchedule(ctx, "s")
		first := sc.LastJobID
		if j, _ := c.Get(ctx, first); j.State != hopper.StateRunning {
			t.Fatalf("first job: %s, want running", j.State)
		}
		tick := time.Now().Truncate(time.Minute).Add(time.Minute)
		time.Sleep(time.Minute)
		synctest.Wait()
		j, _ := c.Get(ctx, first)
		if j.State != hopper.StateCancelled || !j.FinishedAt.Equal(tick) {
			t.Errorf("first job after the next tick: %s at %v, want cancelled at the tick %v", j.State, j.FinishedAt, tick)
		}
		sc, _ = c.GetSchedule(ctx, "s")
		second := sc.LastJobID
		run, err := c.RunSchedule(ctx, "s", hopper.RunScheduleOptions{})
		if err != nil {
			t.Fatalf("run now with overlap cancel: %v", err)
		}
		synctest.Wait()
		if j, _ := c.Get(ctx, second); j.State != hopper.StateCancelled {
			t.Errorf("the tick's job after a run now: %s, want cancelled", j.State)
		}
		if j, _ := c.Get(ctx, run.ID); j.State != hopper.StateRunning {
			t.Errorf("the run now: %s, want running", j.State)
		}
	})
}

func TestAddScheduleOverlapCancelRefusesFixedDelay(t *testing.T) {
	t.Parallel()
	ws, _ := ticks(0)
	c := newClient(t, hopper.Config{Workers: ws})
	_, err := c.AddSchedule(context.Background(), "s", hopper.ScheduleOptions{Every: time.Minute, FixedDelay: true, Kind: "tick", Overlap: hopper.OverlapCancel})
	var fe *hopper.FieldError
	if !errors.As(err, &fe) || fe.Field != "overlap" {
		t.Errorf("fixed delay with overlap cancel: %v, want a FieldError on overlap", err)
	}
	_, err = c.AddSchedule(context.Background(), "s", hopper.ScheduleOptions{Every: time.Minute, Kind: "tick", Overlap: 7})
	if !errors.As(err, &fe) || fe.Field != "overlap" {
		t.Errorf("overlap 7: %v, want a FieldError on overlap", err)
	}
}
