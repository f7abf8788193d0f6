package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/store/memstore"
)

// errOdd is what the check of TestRegisterChecked refuses.
var errOdd = errors.New("odd numbers are not allowed here")

// TestRegisterChecked: the extra check of RegisterChecked runs after the
// args type's Validate, at Enqueue, AddSchedule and CheckArgs (a
// FieldError on args whose Err is the check's error, nothing stored) and
// before the handler (a job another client enqueued dies without running
// it).
func TestRegisterChecked(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memstore.New()
		ws := hopper.NewWorkers()
		ran := 0
		var checked atomic.Int32
		even := func(a positive) error {
			checked.Add(1)
			if a.N%2 != 0 {
				return errOdd
			}
			return nil
		}
		hopper.RegisterChecked(ws, "even", func(ctx context.Context, a positive) (any, error) { ran++; return a.N, nil }, even, nil)
		c := newClient(t, hopper.Config{Store: st, Workers: ws})

		var fe *hopper.FieldError
		if _, err := c.Enqueue(ctx, "even", positive{N: 3}, nil); !errors.As(err, &fe) || fe.Field != "args" || !errors.Is(err, errOdd) {
			t.Errorf("Enqueue(even, 3): %v, want a FieldError on args matching the check's error", err)
		}
		if _, err := c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Minute, Kind: "even", Args: positive{N: 5}}); !errors.Is(err, errOdd) {
			t.Errorf("AddSchedule(even, 5): %v, want the check's error", err)
		}
		if err := ws.CheckArgs("even", json.RawMessage(`{"N":7}`)); !errors.As(err, &fe) || fe.Field != "args" || !errors.Is(err, errOdd) {
			t.Errorf("CheckArgs(even, 7): %v, want a FieldError on args", err)
		}
		// Validate comes first: the check never sees args it rejects.
		before := checked.Load()
		if _, err := c.Enqueue(ctx, "even", positive{N: -2}, nil); err == nil || !strings.Contains(err.Error(), "N must be positive") || checked.Load() != before {
			t.Errorf("Enqueue(even, -2): %v (check called %d times), want Validate's error and no check", err, checked.Load()-before)
		}
		if n, _ := c.Count(ctx, hopper.ListOptions{}); n != 0 {
			t.Fatalf("%d jobs stored after refused enqueues", n)
		}

		good := enqueue(t, c, "even", positive{N: 4}, nil)
		producer, _ := hopper.NewClient(hopper.Config{Store: st, Logger: quiet}) // no workers: any args
		bad, err := producer.Enqueue(ctx, "even", positive{N: 9}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if j := wait(t, c, good); j.State != hopper.StateCompleted || string(j.Result) != "4" {
			t.Errorf("args the check accepts: %s, result %s", j.State, j.Result)
		}
		j := wait(t, c, bad.ID)
		if j.State != hopper.StateDead || j.Attempt != 1 || !strings.Contains(j.LastError, errOdd.Error()) || ran != 1 {
			t.Fatalf("job with args the check rejects: %s after %d attempts: %q (handler ran %d times)", j.State, j.Attempt, j.LastError, ran)
		}
	})
}
