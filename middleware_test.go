package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
)

// orderedMiddleware returns a Middleware named name that records, in r,
// each of its calls.
func orderedMiddleware(r *recorder, name string) hopper.Middleware {
	return hopper.Middleware{
		Enqueue: func(ctx context.Context, req *hopper.EnqueueRequest) (func(hopper.EnqueueResult, error), error) {
			r.add(name + ".enqueue")
			return func(hopper.EnqueueResult, error) { r.add(name + ".after") }, nil
		},
		Work: func(ctx context.Context, j *hopper.Job, next func(context.Context) error) error {
			r.add(name + ".work>")
			err := next(ctx)
			r.add(name + ".work<")
			return err
		},
		WorkStart: func(context.Context, *hopper.Job) { r.add(name + ".start") },
		WorkEnd:   func(context.Context, *hopper.Job, error, time.Duration) { r.add(name + ".end") },
		Dead:      func(*hopper.Job) { r.add(name + ".dead") },
	}
}

// TestMiddlewareOrder: the client's middleware run outside the kind's, each
// in the order given; after functions and inner wrappers unwind in reverse.
func TestMiddlewareOrder(t *testing.T) {
	t.Parallel()
	r := new(recorder)
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "k", func(context.Context, json.RawMessage) (any, error) {
		r.add("handler")
		return nil, hopper.Permanent(errors.New("no"))
	}, nil)
	ws.Use("k", orderedMiddleware(r, "C"))
	c := silentClient(t, hopper.Config{Workers: ws,
		Middleware: []hopper.Middleware{orderedMiddleware(r, "A"), orderedMiddleware(r, "B")}})
	if _, err := c.Enqueue(context.Background(), "k", nil, nil); err != nil {
		t.Fatal(err)
	}
	stepAt(t, c, farFuture, true)
	want := []string{
		"A.enqueue", "B.enqueue", "C.enqueue", "C.after", "B.after", "A.after",
		"A.start", "B.start", "C.start",
		"A.work>", "B.work>", "C.work>", "handler", "C.work<", "B.work<", "A.work<",
		"A.end", "B.end", "C.end",
		"A.dead", "B.dead", "C.dead",
	}
	if got := r.get(); !slices.Equal(got, want) {
		t.Errorf("calls:\n got %q\nwant %q", got, want)
	}
}

// TestEnqueueMiddlewareChanges: an enqueue middleware changes a job's
// options and refuses another; the caller's options are not touched, and a
// refused batch stores nothing and tells every after function why.
func TestEnqueueMiddlewareChanges(t *testing.T) {
	t.Parallel()
	refuse := errors.New("refused by policy")
	var afterErrs []error
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "k", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
	c := silentClient(t, hopper.Config{Workers: ws, Middleware: []hopper.Middleware{{
		Enqueue: func(ctx context.Context, r *hopper.EnqueueRequest) (func(hopper.EnqueueResult, error), error) {
			if string(r.Args.(json.RawMessage)) == `"bad"` {
				return nil, refuse
			}
			r.Options.Priority = 7
			r.Options.Queue = "changed"
			return func(_ hopper.EnqueueResult, err error) { afterErrs = append(afterErrs, err) }, nil
		},
	}}})
	ctx := context.Background()
	own := &hopper.EnqueueOptions{Queue: "mine"}
	res, err := c.Enqueue(ctx, "k", json.RawMessage(`1`), own)
	if err != nil {
		t.Fatal(err)
	}
	j, err := c.Get(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.Priority != 7 || j.Queue != "changed" {
		t.Errorf("job: priority %d queue %q, want 7 and changed", j.Priority, j.Queue)
	}
	if own.Queue != "mine" || own.Priority != 0 {
		t.Errorf("the caller's options changed: %+v", own)
	}
	_, err = c.EnqueueMany(ctx, []hopper.EnqueueRequest{
		{Kind: "k", Args: json.RawMessage(`2`)},
		{Kind: "k", Args: json.RawMessage(`"bad"`)},
	})
	if !errors.Is(err, refuse) || !strings.Contains(err.Error(), "request 1") {
		t.Fatalf("EnqueueMany: got %v, want request 1's refusal", err)
	}
	if n, err := c.Count(ctx, hopper.ListOptions{}); err != nil || n != 1 {
		t.Errorf("Count: %d, %v; want the first call's job only", n, err)
	}
	if len(afterErrs) != 2 || afterErrs[0] != nil || !errors.Is(afterErrs[1], refuse) {
		t.Errorf("after errors: %v, want [nil, refused]", afterErrs)
	}
}

// TestWorkMiddlewarePanicAndContext: a work middleware gives the handler a
// context value, and sees its panic, which it may turn into an error; the
// WorkEnd hook of a handler whose panic no middleware recovers gets it as
// an error with the stack, and the attempt fails as without hooks.
func TestWorkMiddlewarePanicAndContext(t *testing.T) {
	t.Parallel()
	type key struct{}
	var endErr error
	var recovered any
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "value", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return ctx.Value(key{}), nil
	}, nil)
	hopper.RegisterRaw(ws, "panics", func(context.Context, json.RawMessage) (any, error) {
		panic("boom")
	}, &hopper.EnqueueOptions{MaxAttempts: 1})
	ws.Use("value", hopper.Middleware{Work: func(ctx context.Context, j *hopper.Job, next func(context.Context) error) error {
		return next(context.WithValue(ctx, key{}, "from middleware"))
	}})
	ws.Use("panics", hopper.Middleware{
		Work: func(ctx context.Context, j *hopper.Job, next func(context.Context) error) error {
			defer func() {
				recovered = recover()
				panic(recovered) // and on, to the hooks
			}()
			return next(ctx)
		},
		WorkEnd: func(_ context.Context, _ *hopper.Job, err error, _ time.Duration) { endErr = err },
	})
	c := silentClient(t, hopper.Config{Workers: ws})
	ctx := context.Background()
	a, _ := c.Enqueue(ctx, "value", nil, nil)
	b, _ := c.Enqueue(ctx, "panics", nil, nil)
	stepAt(t, c, farFuture, true)
	stepAt(t, c, farFuture, true)
	if j, _ := c.Get(ctx, a.ID); string(j.Result) != `"from middleware"` {
		t.Errorf("result %s, want the middleware's context value", j.Result)
	}
	if recovered != "boom" {
		t.Errorf("the middleware recovered %v, want boom", recovered)
	}
	if endErr == nil || !strings.HasPrefix(endErr.Error(), "panic: boom") || !strings.Contains(endErr.Error(), "goroutine") {
		t.Errorf("WorkEnd's error %v, want the panic and its stack", endErr)
	}
	if j, _ := c.Get(ctx, b.ID); j.State != hopper.StateDead || !strings.HasPrefix(j.LastError, "panic: boom") {
		t.Errorf("job %s, %q; want dead by the panic", j.State, j.LastError)
	}
}

// TestHooksTiming: WorkEnd gets how long the handler ran, in fake time;
// ScheduleFired sees each tick's job of a started client.
func TestHooksTiming(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		took := make(chan time.Duration, 1)
		fired := make(chan hopper.ID, 1)
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "slow", func(context.Context, json.RawMessage) (any, error) {
			time.Sleep(3 * time.Second)
			return nil, nil
		}, nil)
		c := silentClient(t, hopper.Config{Workers: ws, Middleware: []hopper.Middleware{{
			WorkEnd:       func(_ context.Context, _ *hopper.Job, _ error, d time.Duration) { took <- d },
			ScheduleFired: func(s *hopper.Schedule, j *hopper.Job) { fired <- j.ID },
		}}})
		ctx := context.Background()
		if _, err := c.AddSchedule(ctx, "every-hour", hopper.ScheduleOptions{Every: time.Hour, Kind: "slow"}); err != nil {
			t.Fatal(err)
		}
		startClient(t, c)
		id := <-fired
		if d := <-took; d != 3*time.Second {
			t.Errorf("took %s, want 3s", d)
		}
		if j := waitDone(t, c, id); j.State != hopper.StateCompleted {
			t.Errorf("fired job %s", j.State)
		}
		stopGracefully(t, c)
	})
}

// TestUseUnknownKind: Use on a kind not registered is a programming error.
func TestUseUnknownKind(t *testing.T) {
	t.Parallel()
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"nope"`) {
			t.Errorf("recovered %v, want a panic naming the kind", r)
		}
	}()
	hopper.NewWorkers().Use("nope", hopper.Middleware{})
}

// TestEmptyMiddlewareCostsNothing: a client whose middleware set no
// function takes the path of a client without any: an enqueue does not
// copy the caller's options (a middleware's path gives every job a
// metadata map of its own), so allocates as much as without. Each side is
// the fewest of five measurements, alternated: under the race detector
// sync.Pool drops items at random, and one measurement in about 25 read
// an allocation more on either side.
func TestEmptyMiddlewareCostsNothing(t *testing.T) {
	// Not parallel: testing.AllocsPerRun refuses to run in a parallel test.
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "k", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
	ws.Use("k", hopper.Middleware{})
	none := silentClient(t, hopper.Config{Workers: ws, CompletedRetention: -1})
	empty := silentClient(t, hopper.Config{Workers: ws, CompletedRetention: -1, Middleware: []hopper.Middleware{{}}})
	ctx := context.Background()
	allocs := func(c *hopper.Client) float64 {
		return testing.AllocsPerRun(100, func() { c.Enqueue(ctx, "k", nil, nil) })
	}
	a, b := allocs(none), allocs(empty)
	for range 4 {
		a, b = min(a, allocs(none)), min(b, allocs(empty))
	}
	if b > a {
		t.Errorf("an enqueue allocates %v times with an empty Middleware, %v without", b, a)
	}
}
