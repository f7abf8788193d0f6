package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// TestCancelDuringProcessNext: Cancel of a job that ProcessNext is running
// cancels its context, and the job ends cancelled, not retried.
func TestCancelDuringProcessNext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testCancelDuringProcessNext)
}

func testCancelDuringProcessNext(t *testing.T) {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	var c *hopper.Client
	hopper.RegisterRaw(ws, "k", func(ctx context.Context, _ json.RawMessage) (any, error) {
		if ok, err := c.Cancel(context.Background(), hopper.JobFromContext(ctx).ID); !ok || err != nil {
			t.Errorf("Cancel of the running job: %v %v, want true", ok, err)
		}
		select {
		case <-ctx.Done(): // cancelled by Cancel
		case <-time.After(time.Hour):
			t.Error("Cancel did not cancel the handler's context")
		}
		return nil, errors.New("interrupted")
	}, nil)
	c, _ = hopper.NewClient(hopper.Config{Workers: ws, Logger: quiet})
	defer c.StopNow()
	id := enqueue(t, c, "k", nil, nil)
	j, ok, err := c.ProcessNext(ctx, time.Now())
	if !ok || err != nil {
		t.Fatalf("ProcessNext: %v %v", ok, err)
	}
	if j.State != hopper.StateCancelled || j.ID != id {
		t.Errorf("ProcessNext returned the job %s, want cancelled", j.State)
	}
	if g, _ := c.Get(ctx, id); g.State != hopper.StateCancelled {
		t.Errorf("stored job: %s, want cancelled", g.State)
	}
	if _, ok, _ := c.ProcessNext(ctx, time.Now().Add(time.Hour)); ok {
		t.Error("the cancelled job ran again")
	}
}

// TestCancelSurvivesShutdown: a cancel requested through the store (by
// another process) and not yet seen by the worker still wins when a forced
// shutdown gives the job back.
func TestCancelSurvivesShutdown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memstore.New()
		started := make(chan struct{})
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "slow", func(ctx context.Context, _ json.RawMessage) (any, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		}, nil)
		worker, _ := hopper.NewClient(hopper.Config{Store: st, Workers: ws, Logger: quiet})
		other, _ := hopper.NewClient(hopper.Config{Store: st, Logger: quiet}) // another process
		id := enqueue(t, other, "slow", nil, nil)
		worker.Start()
		<-started
		if ok, _ := other.Cancel(ctx, id); !ok {
			t.Fatal("Cancel: false")
		}
		worker.StopNow() // before any lease renewal told the worker
		if j, _ := other.Get(ctx, id); j.State != hopper.StateCancelled {
			t.Errorf("after a forced shutdown: %s, want cancelled", j.State)
		}
	})
}

// TestNoTickAfterStopBegins: while Stop waits for a running job, the
// schedules stop firing.
func TestNoTickAfterStopBegins(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memstore.New()
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "long", func(ctx context.Context, _ json.RawMessage) (any, error) {
			time.Sleep(3 * time.Minute)
			return nil, nil
		}, nil)
		c := newClient(t, hopper.Config{Store: st, Workers: ws})
		if _, err := c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Minute, Kind: "long", Overlap: hopper.OverlapAllow}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute + time.Second) // the first tick fired and runs
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		began := time.Now()
		if err := c.Stop(stop); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(began); waited < 2*time.Minute {
			t.Fatalf("Stop returned after %s, before the running job finished", waited)
		}
		if n, _ := st.Count(ctx, storeAll); n != 1 {
			t.Errorf("jobs after Stop: %d, want 1 (no tick fired while Stop waited)", n)
		}
	})
}

var storeAll = store.ListParams{}
