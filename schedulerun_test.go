package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
)

func TestRunScheduleManualRun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "tick", func(ctx context.Context, _ json.RawMessage) (any, error) {
			time.Sleep(90 * time.Second)
			return nil, nil
		}, nil)
		c := newClient(t, hopper.Config{Workers: ws})
		sc, err := c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Hour, Kind: "tick", Args: map[string]int{"n": 1},
			Options: &hopper.EnqueueOptions{MaxAttempts: 7, Priority: 3, Timeout: 5 * time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.PauseSchedule(ctx, "s"); err != nil {
			t.Fatal(err)
		}
		// A paused schedule runs now, with its job's full options, visible at once.
		j, err := c.RunSchedule(ctx, "s", hopper.RunScheduleOptions{})
		if err != nil {
			t.Fatalf("RunSchedule: %v", err)
		}
		got, err := c.Get(ctx, j.ID)
		if err != nil {
			t.Fatalf("Get(%d) right after RunSchedule: %v", j.ID, err)
		}
		if !got.Manual() || got.Schedule != "s" || got.Kind != "tick" || string(got.Args) != `{"n":1}` ||
			got.MaxAttempts != 7 || got.Priority != 3 || got.Timeout != 5*time.Minute {
			t.Errorf("manual run: %+v, want a manual run of s with its args and options", got)
		}
		if b, _ := json.Marshal(got); !json.Valid(b) || !strings.Contains(string(b), `"manual":true`) {
			t.Errorf("manual run's JSON %s lacks \"manual\":true", b)
		}
		time.Sleep(time.Second) // it starts
		synctest.Wait()
		// Skip policy: refused while it runs, naming it; forced, it runs.
		_, err = c.RunSchedule(ctx, "s", hopper.RunScheduleOptions{})
		var busy *hopper.ScheduleBusyError
		if !errors.Is(err, hopper.ErrScheduleBusy) || !errors.As(err, &busy) || busy.Job != j.ID || busy.State != hopper.StateRunning {
			t.Fatalf("RunSchedule while its run runs: %v, want a ScheduleBusyError naming job %d, running", err, j.ID)
		}
		forced, err := c.RunSchedule(ctx, "s", hopper.RunScheduleOptions{Force: true})
		if err != nil || forced.ID == j.ID {
			t.Fatalf("RunSchedule forced: %v, %v", forced, err)
		}
		after, err := c.GetSchedule(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		if !after.NextRunAt.Equal(sc.NextRunAt) || !after.LastFireAt.IsZero() || after.LastJobID != forced.ID {
			t.Errorf("schedule after runs now: next %v last fire %v last job %d; want next %v unchanged, no fire, last job %d",
				after.NextRunAt, after.LastFireAt, after.LastJobID, sc.NextRunAt, forced.ID)
		}
		if done := wait(t, c, forced.ID); done.State != hopper.StateCompleted {
			t.Errorf("forced run ended %s", done.State)
		}
		if _, err := c.RunSchedule(ctx, "nope", hopper.RunScheduleOptions{}); !errors.Is(err, hopper.ErrNotFound) {
			t.Errorf("RunSchedule of an unknown schedule: %v, want ErrNotFound", err)
		}
	})
}

func TestRunScheduleAllowOverlapRunsWhileBusy(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ws, _ := ticks(time.Hour)
		c := newClient(t, hopper.Config{Workers: ws})
		if _, err := c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Hour, Kind: "tick", Overlap: hopper.OverlapAllow}); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := c.RunSchedule(ctx, "s", hopper.RunScheduleOptions{}); err != nil {
				t.Fatalf("run now %d with overlap allow: %v", i, err)
			}
		}
	})
}
