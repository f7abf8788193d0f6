package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/store/memstore"
)

// TestQueueRate: a queue throttled to 10/s with a burst of 3, worked by two
// clients sharing a store with 8 workers each: 3 jobs start at once, then
// one every 100 ms exactly — each started when the throttle allows it,
// without a poll and without a lost wake-up; a held job says until when it
// waits.
func TestQueueRate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var starts []time.Time
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "call", func(ctx context.Context, _ json.RawMessage) (any, error) {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			return nil, nil
		}, nil)
		ms := memstore.New()
		a := newClient(t, hopper.Config{Store: ms, Workers: ws, Concurrency: 8})
		b := newClient(t, hopper.Config{Store: ms, Workers: ws, Concurrency: 8})
		ctx := context.Background()
		if err := a.SetQueueRate(ctx, "api", hopper.Rate{N: 10, Period: time.Second, Burst: 3}); err != nil {
			t.Fatal(err)
		}
		begin := time.Now()
		var last hopper.ID
		for range 13 {
			last = enqueue(t, a, "call", nil, &hopper.EnqueueOptions{Queue: "api"})
		}
		synctest.Wait()
		j, err := b.Get(ctx, last)
		if err != nil {
			t.Fatal(err)
		}
		want := "queue api throttled until " + begin.Add(100*time.Millisecond).UTC().Format("15:04:05.000")
		if why, err := b.WaitReason(ctx, j); err != nil || why != want {
			t.Errorf("WaitReason of a throttled job: %q, %v; want %q", why, err, want)
		}
		qs, err := b.Queues(ctx)
		if err != nil || len(qs) != 1 || qs[0].Rate != (hopper.Rate{N: 10, Period: time.Second, Burst: 3}) ||
			qs[0].Throttled != 10 || qs[0].Held != 10 {
			t.Errorf("Queues: %+v, %v; want api at 10/1s burst 3, 10 throttled", qs, err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(starts) != 13 {
			t.Fatalf("%d jobs started, want 13", len(starts))
		}
		slices.SortFunc(starts, time.Time.Compare)
		for i, s := range starts {
			want := begin.Add(time.Duration(max(i-2, 0)) * 100 * time.Millisecond)
			if !s.Equal(want) {
				t.Errorf("start %d at %v, want %v", i, s.Sub(begin), want.Sub(begin))
			}
		}
		stopGracefully(t, a)
		stopGracefully(t, b)
	})
}

// TestQueueRateStep: the step API obeys throttles, so a test steps through
// one by its now values; a queue that drops its excess cancels it with the
// reason, and ProcessNext passes over the dropped jobs.
func TestQueueRateStep(t *testing.T) {
	t.Parallel()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "ok", func(ctx context.Context, _ json.RawMessage) (any, error) { return nil, nil }, nil)
	c := silentClient(t, hopper.Config{Workers: ws})
	ctx := context.Background()
	if err := c.SetQueueRate(ctx, "q", hopper.Rate{N: 2, Period: time.Second, Burst: 2}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		enqueue(t, c, "ok", nil, &hopper.EnqueueOptions{Queue: "q"})
	}
	at := time.Now().Add(time.Hour)
	for _, step := range []struct {
		after time.Duration
		want  int
	}{{0, 2}, {0, 0}, {499 * time.Millisecond, 0}, {500 * time.Millisecond, 1}, {time.Second, 1}, {10 * time.Second, 1}} {
		ran, err := c.RunReady(ctx, at.Add(step.after))
		if err != nil || len(ran) != step.want {
			t.Fatalf("RunReady %v on: ran %d, %v; want %d", step.after, len(ran), err, step.want)
		}
	}

	if err := c.SetQueueRate(ctx, "d", hopper.Rate{N: 1, Period: time.Hour, Drop: true}); err != nil {
		t.Fatal(err)
	}
	var ids []hopper.ID
	for range 3 {
		ids = append(ids, enqueue(t, c, "ok", nil, &hopper.EnqueueOptions{Queue: "d"}))
	}
	ran, err := c.RunReady(ctx, at)
	if err != nil || len(ran) != 1 || ran[0].ID != ids[0] {
		t.Fatalf("RunReady of the dropping queue: %v, %v; want job %d", ran, err, ids[0])
	}
	for _, id := range ids[1:] {
		j, err := c.Get(ctx, id)
		if err != nil || j.State != hopper.StateCancelled || j.LastError != "dropped: queue d over its rate 1/1h" || j.Attempt != 0 {
			t.Errorf("job %d over the rate: %+v, %v; want cancelled, dropped, never run", id, j, err)
		}
	}
}

// TestQueueRateBad: a bad rate is a *FieldError naming its field, and
// ParseRate reads the CLI's and the API's forms.
func TestQueueRateBad(t *testing.T) {
	t.Parallel()
	c := silentClient(t, hopper.Config{})
	ctx := context.Background()
	for _, c2 := range []struct {
		r     hopper.Rate
		field string
	}{
		{hopper.Rate{N: 1}, "rate"},
		{hopper.Rate{N: -5, Period: time.Second}, "rate"},
		{hopper.Rate{N: 5, Period: time.Second, Burst: -1}, "burst"},
	} {
		var fe *hopper.FieldError
		if err := c.SetQueueRate(ctx, "q", c2.r); !errors.As(err, &fe) || fe.Field != c2.field {
			t.Errorf("SetQueueRate(%+v): %v, want a *FieldError on %s", c2.r, err, c2.field)
		}
	}
	for in, want := range map[string]hopper.Rate{
		"100/1s": {N: 100, Period: time.Second}, "5/m": {N: 5, Period: time.Minute},
		"1/250ms": {N: 1, Period: 250 * time.Millisecond}, "none": {},
	} {
		if got, err := hopper.ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q): %+v, %v; want %+v", in, got, err, want)
		}
		if in != "5/m" {
			if got := want.String(); got != in {
				t.Errorf("%+v.String(): %q, want %q", want, got, in)
			}
		}
	}
	for _, in := range []string{"100", "x/1s", "0/1s", "5/1x", "1/1us"} {
		var fe *hopper.FieldError
		if _, err := hopper.ParseRate(in); !errors.As(err, &fe) || fe.Field != "rate" {
			t.Errorf("ParseRate(%q): %v, want a *FieldError on rate", in, err)
		}
	}
}
