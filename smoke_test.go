package hopper_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
)

func TestSmokeRetryToDead(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		calls := 0
		hopper.Register(ws, "fail", func(ctx context.Context, args struct{}) (any, error) {
			calls++
			return nil, errors.New("boom")
		}, nil)
		p := backoff.Fixed(time.Second)
		c, err := hopper.NewClient(hopper.Config{Workers: ws, Concurrency: 2, Retry: &p, MaxAttempts: 3})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		c.Start()
		res, err := c.Enqueue(ctx, "fail", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		j, err := c.Wait(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != hopper.StateDead || calls != 3 || len(j.Attempts) != 3 {
			t.Fatalf("got state %s calls %d attempts %d", j.State, calls, len(j.Attempts))
		}
		if err := c.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
