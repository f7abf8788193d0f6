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

// TestArgsDecodeExactly: a kind registered with Register refuses args
// holding a string that decoding would change — a \u escape of a lone
// UTF-16 surrogate, which encoding/json decodes to U+FFFD, or bytes that
// are not UTF-8 — naming the string, at Enqueue and CheckArgs; a job
// holding one that another client enqueued dies without running the
// handler. A RegisterRaw kind gets the args as they are.
func TestArgsDecodeExactly(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memstore.New()
		ws := hopper.NewWorkers()
		type note struct{ Lines []string }
		ran := 0
		hopper.Register(ws, "note", func(ctx context.Context, a note) (any, error) { ran++; return a, nil }, nil)
		hopper.RegisterRaw(ws, "raw", func(ctx context.Context, a json.RawMessage) (any, error) { return a, nil }, nil)
		c := newClient(t, hopper.Config{Store: st, Workers: ws})

		lone := json.RawMessage(`{"Lines":["ok","\ud800"]}`)
		var fe *hopper.FieldError
		if _, err := c.Enqueue(ctx, "note", lone, nil); !errors.As(err, &fe) || fe.Field != "args" || !strings.Contains(fe.Reason, `Lines[1] holds \ud800`) {
			t.Errorf("Enqueue(note, %s): %v, want a FieldError on args naming Lines[1]", lone, err)
		}
		if err := ws.CheckArgs("note", lone); !errors.As(err, &fe) || !strings.Contains(fe.Reason, `Lines[1] holds \ud800`) {
			t.Errorf("CheckArgs(note, %s): %v, want a FieldError on args naming Lines[1]", lone, err)
		}
		if err := ws.CheckArgs("note", json.RawMessage("{\"Lines\":[\"caf\xe9\"]}")); !errors.As(err, &fe) || !strings.Contains(fe.Reason, "Lines[0] is not valid UTF-8") {
			t.Errorf("CheckArgs(note, bytes that are not UTF-8): %v, want a FieldError on args naming Lines[0]", err)
		}
		if n, _ := c.Count(ctx, hopper.ListOptions{}); n != 0 {
			t.Fatalf("%d jobs stored after refused enqueues", n)
		}
		// First, so that the enqueues of c that follow wake its dispatcher
		// after this job is stored.
		producer, _ := hopper.NewClient(hopper.Config{Store: st, Logger: quiet}) // no workers: any args
		bad, err := producer.Enqueue(ctx, "note", lone, nil)
		if err != nil {
			t.Fatal(err)
		}
		pair := enqueue(t, c, "note", json.RawMessage(`{"Lines":["\ud83d\ude00","\\ud800"]}`), nil)
		raw := enqueue(t, c, "raw", lone, nil)
		if j := wait(t, c, pair); j.State != hopper.StateCompleted || string(j.Result) != `{"Lines":["😀","\\ud800"]}` {
			t.Errorf("a surrogate pair and an escaped backslash: %s, result %s", j.State, j.Result)
		}
		if j := wait(t, c, raw); j.State != hopper.StateCompleted || string(j.Result) != string(lone) {
			t.Errorf("a raw kind: %s, result %s, want its args exactly", j.State, j.Result)
		}
		j := wait(t, c, bad.ID)
		if j.State != hopper.StateDead || j.Attempt != 1 || !strings.Contains(j.LastError, `Lines[1] holds \ud800`) || ran != 1 {
			t.Fatalf("job holding a lone surrogate: %s after %d attempts: %q (handler ran %d times)", j.State, j.Attempt, j.LastError, ran)
		}
	})
}
