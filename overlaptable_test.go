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
	"github.com/hopperq/hopper/store/memstore"
)

// TestScheduleOverlapTable: every overlap policy × {a run shorter than
// the period, a run longer, a crash mid-run}, on a schedule of every
// minute watched for 5m1s (fake clock). The crash: the first tick's job is
// claimed by a worker that dies with a lease of 90s; the rescuer (every
// 10s) gives it back after 2:30 and it runs again, for 30s. What is
// checked: the ticks whose jobs ran (by their fire time), when each run
// started, how the jobs ended, the cause a cancelled handler saw, and the
// schedule's skipped ticks and buffered runs at the end.
func TestScheduleOverlapTable(t *testing.T) {
	t.Parallel()
	const short, long = 30 * time.Second, 100 * time.Second
	type want struct {
		ran                  []time.Duration // fire times of the jobs whose handler ran
		started              []time.Duration // when those runs started (nil: not checked)
		completed, cancelled int
		cause                error // the cause every cancelled handler saw
		skipped, buffered    int   // the schedule's at the end
	}
	m := func(ms ...float64) []time.Duration {
		out := make([]time.Duration, len(ms))
		for i, x := range ms {
			out[i] = time.Duration(x * float64(time.Minute))
		}
		return out
	}
	const crash = -1
	for _, tc := range []struct {
		overlap hopper.Overlap
		run     time.Duration // crash: the first job's worker dies; runs take short
		want    want
	}{
		{hopper.OverlapSkip, short, want{ran: m(1, 2, 3, 4, 5), started: m(1, 2, 3, 4, 5), completed: 4}},
		{hopper.OverlapSkip, long, want{ran: m(1, 3, 5), started: m(1, 3, 5), completed: 2}},
		{hopper.OverlapSkip, crash, want{ran: m(1, 4, 5), completed: 2}},

		{hopper.OverlapAllow, short, want{ran: m(1, 2, 3, 4, 5), started: m(1, 2, 3, 4, 5), completed: 4}},
		{hopper.OverlapAllow, long, want{ran: m(1, 2, 3, 4, 5), started: m(1, 2, 3, 4, 5), completed: 3}},
		{hopper.OverlapAllow, crash, want{ran: m(1, 2, 3, 4, 5), completed: 4}},

		{hopper.OverlapCancel, short, want{ran: m(1, 2, 3, 4, 5), started: m(1, 2, 3, 4, 5), completed: 4}},
		{hopper.OverlapCancel, long, want{ran: m(1, 2, 3, 4, 5), started: m(1, 2, 3, 4, 5), cancelled: 4, cause: hopper.ErrCancelled}},
		// The tick of 2:00 cancels the job of the dead worker: the rescue
		// ends it cancelled, never run again.
		{hopper.OverlapCancel, crash, want{ran: m(2, 3, 4, 5), completed: 3, cancelled: 1}},

		{hopper.OverlapTerminate, short, want{ran: m(1, 2, 3, 4, 5), started: m(1, 2, 3, 4, 5), completed: 4}},
		{hopper.OverlapTerminate, long, want{ran: m(1, 2, 3, 4, 5), started: m(1, 2, 3, 4, 5), cancelled: 4, cause: hopper.ErrTerminated}},
		{hopper.OverlapTerminate, crash, want{ran: m(2, 3, 4, 5), completed: 3, cancelled: 1}},

		{hopper.OverlapBufferOne, short, want{ran: m(1, 2, 3, 4, 5), started: m(1, 2, 3, 4, 5), completed: 4}},
		// 2:00 waits for 1 (ends 2:40); 3:00 waits for 2 (ends 4:20);
		// 4:00 finds one waiting: skipped; 5:00 waits for 3.
		{hopper.OverlapBufferOne, long, want{ran: m(1, 2, 3), started: []time.Duration{60 * time.Second, 160 * time.Second, 260 * time.Second}, completed: 2, skipped: 1, buffered: 1}},
		// 2:00 waits for the rescued 1 (ends about 3:10); 3:00 finds one
		// waiting: skipped; 4:00 and 5:00 fire (nothing busy then).
		{hopper.OverlapBufferOne, crash, want{ran: m(1, 2, 4, 5), completed: 3}},

		{hopper.OverlapBufferAll, short, want{ran: m(1, 2, 3, 4, 5), started: m(1, 2, 3, 4, 5), completed: 4}},
		// As buffer one, but 4:00 waits too.
		{hopper.OverlapBufferAll, long, want{ran: m(1, 2, 3), started: []time.Duration{60 * time.Second, 160 * time.Second, 260 * time.Second}, completed: 2, buffered: 2}},
		// 2:00 and 3:00 wait for the rescued 1, then run one after the
		// other; 4:00 waits for 3; 5:00 fires.
		{hopper.OverlapBufferAll, crash, want{ran: m(1, 2, 3, 4, 5), completed: 4}},
	} {
		name := fmt.Sprintf("%s/%s", tc.overlap, tc.run)
		if tc.run == crash {
			name = tc.overlap.String() + "/crash"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				start := time.Now()
				run := tc.run
				if run == crash {
					run = short
				}
				ws := hopper.NewWorkers()
				var mu sync.Mutex
				var ran, started []time.Duration
				var causes []error
				hopper.RegisterRaw(ws, "tick", func(ctx context.Context, _ json.RawMessage) (any, error) {
					mu.Lock()
					ran = append(ran, hopper.JobFromContext(ctx).FireTime.Sub(start))
					started = append(started, time.Since(start))
					mu.Unlock()
					select {
					case <-time.After(run):
						return nil, nil
					case <-ctx.Done():
						mu.Lock()
						causes = append(causes, context.Cause(ctx))
						mu.Unlock()
						return nil, context.Cause(ctx)
					}
				}, nil)
				st := memstore.New()
				c, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws, Concurrency: 4, Logger: quiet, RescueInterval: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.StopNow() })
				if _, err := c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Minute, Kind: "tick", Overlap: tc.overlap,
					Options: &hopper.EnqueueOptions{Timeout: time.Hour, MaxAttempts: 3}}); err != nil {
					t.Fatal(err)
				}
				if tc.run == crash {
					time.Sleep(time.Minute)
					c.FireSchedules(ctx, time.Now())
					crashMidJob(t, st, 90*time.Second)
				}
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(5*time.Minute + time.Second - time.Since(start))
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				slices.Sort(ran)
				if !equalDurations(ran, tc.want.ran) {
					t.Errorf("ran the ticks of %v, want %v", ran, tc.want.ran)
				}
				slices.Sort(started)
				if tc.want.started != nil && !equalDurations(started, tc.want.started) {
					t.Errorf("runs started at %v, want %v", started, tc.want.started)
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
				if got := count(hopper.StateCancelled); got != tc.want.cancelled {
					t.Errorf("%d cancelled, want %d", got, tc.want.cancelled)
				}
				for _, cause := range causes {
					if !errors.Is(cause, tc.want.cause) {
						t.Errorf("a cancelled handler saw the cause %v, want %v", cause, tc.want.cause)
					}
				}
				sc, err := c.GetSchedule(ctx, "s")
				if err != nil {
					t.Fatal(err)
				}
				if sc.SkippedTicks != tc.want.skipped || len(sc.Buffered) != tc.want.buffered {
					t.Errorf("schedule at the end: %d skipped ticks, %d runs buffered (%v); want %d and %d",
						sc.SkippedTicks, len(sc.Buffered), sc.Buffered, tc.want.skipped, tc.want.buffered)
				}
			})
		})
	}
}
