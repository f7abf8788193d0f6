package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/pgtest"
	"github.com/hopperq/hopper/store/memstore"
)

// blocker registers "block", whose handler says on started that it runs
// and on stopped the cause its context was cancelled with.
func blocker() (*hopper.Workers, chan struct{}, chan error) {
	ws := hopper.NewWorkers()
	started, stopped := make(chan struct{}, 1), make(chan error, 1)
	hopper.RegisterRaw(ws, "block", func(ctx context.Context, _ json.RawMessage) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return nil, context.Cause(ctx)
	}, nil)
	return ws, started, stopped
}

// TestCancelReachesAnotherClientAtOnce: two clients share a memory store;
// a Cancel through the one that does not run the job reaches the handler
// in the other at once (fake clock: no time passes), not at the next
// lease renewal (10s here).
func TestCancelReachesAnotherClientAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memstore.New()
		ws, started, stopped := blocker()
		runner := newClient(t, hopper.Config{Store: st, Workers: ws})
		other := newClient(t, hopper.Config{Store: st, Workers: hopper.NewWorkers()})
		id := enqueue(t, runner, "block", nil, nil)
		<-started
		at := time.Now()
		if ok, err := other.Cancel(ctx, id); !ok || err != nil {
			t.Fatalf("Cancel: %v, %v", ok, err)
		}
		synctest.Wait()
		select {
		case cause := <-stopped:
			if !errors.Is(cause, hopper.ErrCancelled) {
				t.Errorf("the handler's cause: %v, want ErrCancelled", cause)
			}
			if d := time.Since(at); d != 0 {
				t.Errorf("the cancel reached the handler after %s, want at once", d)
			}
		default:
			t.Fatal("the cancel did not reach the handler running in the other client")
		}
		if j := wait(t, runner, id); j.State != hopper.StateCancelled {
			t.Errorf("job: %s, want cancelled", j.State)
		}
	})
}

// TestCancelReachesAnotherStoreWithin1s: a client on one store (one
// process's) cancels — or terminates — a job that a client on another
// store of the same SQLite file, or of the same PostgreSQL schema, runs:
// the cancel reaches the handler within 1s (the lease renewal, which told
// it before, comes every 10s), and a terminate reaches it as a terminate
// (cause ErrTerminated: the exec kind's SIGKILL), not as a cancel. Real
// clock, bounded by a generous timeout.
func TestCancelReachesAnotherStoreWithin1s(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		st   string
		kill bool
	}{{"sqlite", false}, {"postgres", false}, {"sqlite", true}, {"postgres", true}} {
		st := tc.st
		name := st + "/cancel"
		if tc.kill {
			name = st + "/terminate"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var url string
			if st == "sqlite" {
				url = "sqlite:" + filepath.Join(t.TempDir(), "cancel.db")
			} else {
				url = pgtest.StoreURL(t, 4)
			}
			ctx := context.Background()
			ws, started, stopped := blocker()
			open := func(ws *hopper.Workers) *hopper.Client {
				c, err := hopper.Open(ctx, url, hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.StopNow() })
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				return c
			}
			runner, other := open(ws), open(hopper.NewWorkers())
			r, err := other.Enqueue(ctx, "block", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-started:
			case <-time.After(30 * time.Second):
				t.Fatal("the job did not start")
			}
			at := time.Now()
			stop, want := other.Cancel, hopper.ErrCancelled
			if tc.kill {
				stop, want = other.Terminate, hopper.ErrTerminated
			}
			if ok, err := stop(ctx, r.ID); !ok || err != nil {
				t.Fatalf("%s: %v, %v", name, ok, err)
			}
			select {
			case cause := <-stopped:
				d := time.Since(at)
				t.Logf("from %s in one store to the handler in the other: %s", name, d)
				if d > time.Second {
					t.Errorf("the %s took %s to reach the handler, want within 1s", name, d)
				}
				if !errors.Is(cause, want) {
					t.Errorf("the handler's cause: %v, want %v", cause, want)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the cancel did not reach the handler within 30s")
			}
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if j, err := runner.Wait(wctx, r.ID); err != nil || j.State != hopper.StateCancelled {
				t.Errorf("job: %v, %v; want cancelled", j, err)
			}
		})
	}
}
