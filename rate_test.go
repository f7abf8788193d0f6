package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
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
	c := okStepClient(t)
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

// TestKeyRate: a queue throttled to 10/s per key with a burst of 2, worked
// by two clients sharing a store with 8 workers each: each key starts 2
// jobs at once, then one every 100 ms exactly — a hot key's backlog does
// not slow a cold key, and each start comes when the key's throttle allows
// it, without a poll; a held job and the key say until when.
func TestKeyRate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		starts := map[string][]time.Time{}
		ws := hopper.NewWorkers()
		hopper.Register(ws, "call", func(ctx context.Context, key string) (any, error) {
			mu.Lock()
			starts[key] = append(starts[key], time.Now())
			mu.Unlock()
			return nil, nil
		}, nil)
		ms := memstore.New()
		a := newClient(t, hopper.Config{Store: ms, Workers: ws, Concurrency: 8})
		b := newClient(t, hopper.Config{Store: ms, Workers: ws, Concurrency: 8})
		ctx := context.Background()
		rate := hopper.Rate{N: 10, Period: time.Second, Burst: 2}
		if err := a.SetQueueKeyRate(ctx, "api", rate); err != nil {
			t.Fatal(err)
		}
		begin := time.Now()
		var last hopper.ID
		for range 12 {
			last = enqueue(t, a, "call", "hot", &hopper.EnqueueOptions{Queue: "api", Key: "hot"})
		}
		for range 3 {
			enqueue(t, b, "call", "cold", &hopper.EnqueueOptions{Queue: "api", Key: "cold"})
		}
		synctest.Wait()
		j, err := b.Get(ctx, last)
		if err != nil {
			t.Fatal(err)
		}
		want := "key hot throttled until " + begin.Add(100*time.Millisecond).UTC().Format("15:04:05.000")
		if why, err := b.WaitReason(ctx, j); err != nil || why != want {
			t.Errorf("WaitReason of a throttled key's job: %q, %v; want %q", why, err, want)
		}
		qs, err := b.Queues(ctx)
		if err != nil || len(qs) != 1 || qs[0].KeyRate != (hopper.Rate{N: 10, Period: time.Second, Burst: 2}) || qs[0].Rate.N != 0 {
			t.Errorf("Queues: %+v, %v; want api at 10/1s burst 2 per key", qs, err)
		}
		ks, err := b.Keys(ctx, "api")
		if err != nil || len(ks) != 2 || !ks[1].ThrottledUntil.Equal(begin.Add(100*time.Millisecond)) {
			t.Errorf("Keys: %+v, %v; want cold and hot, hot throttled until +100ms", ks, err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		for key, n := range map[string]int{"hot": 12, "cold": 3} {
			got := starts[key]
			if len(got) != n {
				t.Fatalf("key %s: %d jobs started, want %d", key, len(got), n)
			}
			slices.SortFunc(got, time.Time.Compare)
			for i, s := range got {
				if want := begin.Add(time.Duration(max(i-1, 0)) * 100 * time.Millisecond); !s.Equal(want) {
					t.Errorf("key %s: start %d at %v, want %v", key, i, s.Sub(begin), want.Sub(begin))
				}
			}
		}
		stopGracefully(t, a)
		stopGracefully(t, b)
	})
}

// TestKeyRateStep: the step API obeys a throttle per key, so a test steps
// through it by its now values.
func TestKeyRateStep(t *testing.T) {
	t.Parallel()
	c := okStepClient(t)
	ctx := context.Background()
	if err := c.SetQueueKeyRate(ctx, "q", hopper.Rate{N: 2, Period: time.Second}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		enqueue(t, c, "ok", nil, &hopper.EnqueueOptions{Queue: "q", Key: "a"})
	}
	enqueue(t, c, "ok", nil, &hopper.EnqueueOptions{Queue: "q", Key: "b"})
	at := time.Now().Add(time.Hour)
	if ran, err := c.RunReady(ctx, at); err != nil || len(ran) != 2 {
		t.Fatalf("RunReady: ran %d, %v; want a's first job and b's", len(ran), err)
	}
	for _, step := range []struct {
		after time.Duration
		want  bool
	}{{0, false}, {499 * time.Millisecond, false}, {500 * time.Millisecond, true}, {999 * time.Millisecond, false}, {time.Second, true}, {time.Hour, false}} {
		j, ok, err := c.ProcessNext(ctx, at.Add(step.after))
		if err != nil || ok != step.want || ok && j.Key != "a" {
			t.Fatalf("ProcessNext %v on: %v, %v; want %v (a job of key a)", step.after, ok, err, step.want)
		}
	}
}

// keyRuns counts the runs of a kind "call" whose args are a key, by key.
type keyRuns struct {
	mu  sync.Mutex
	ran map[string]int
}

// workers returns workers with the kind "call" registered to count into k.
func (k *keyRuns) workers() *hopper.Workers {
	k.ran = map[string]int{}
	ws := hopper.NewWorkers()
	hopper.Register(ws, "call", func(ctx context.Context, key string) (any, error) {
		k.mu.Lock()
		k.ran[key]++
		k.mu.Unlock()
		return nil, nil
	}, nil)
	return ws
}

// runs returns a copy of the counts.
func (k *keyRuns) runs() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.ran)
}

// wantDropped fails the test unless sub's next events are the
// EventCancelled of ids, in order, with reason, and c says each is
// cancelled with it, never run.
func wantDropped(t *testing.T, c *hopper.Client, sub *hopper.Subscription, reason string, ids ...hopper.ID) {
	t.Helper()
	for _, id := range ids {
		select {
		case ev := <-sub.C:
			if ev.Job.ID != id || ev.Job.State != hopper.StateCancelled || ev.Job.LastError != reason {
				t.Errorf("event %s of job %d (%s, %q), want job %d cancelled with %q",
					ev.Type, ev.Job.ID, ev.Job.State, ev.Job.LastError, id, reason)
			}
		default:
			t.Fatalf("no EventCancelled for the dropped job %d", id)
		}
		j, err := c.Get(context.Background(), id)
		if err != nil || j.State != hopper.StateCancelled || j.LastError != reason || j.Attempt != 0 {
			t.Errorf("dropped job %d: %+v, %v; want cancelled with %q, never run", id, j, err, reason)
		}
	}
}

// TestKeyRateDrop: a queue whose rate per key drops its excess, worked by
// a client with 4 workers: each key's first job starts, the other jobs of
// a key over its rate are cancelled with the reason — each reported as an
// EventCancelled — and never run; another key is not touched, and a key
// starts again once its rate allows.
func TestKeyRateDrop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var k keyRuns
		ws := k.workers()
		c := newClient(t, hopper.Config{Store: memstore.New(), Workers: ws, Concurrency: 4})
		ctx := context.Background()
		rate := hopper.Rate{N: 1, Period: time.Minute, Drop: true}
		if err := c.SetQueueKeyRate(ctx, "api", rate); err != nil {
			t.Fatal(err)
		}
		sub := c.Subscribe(job.EventCancelled)
		defer sub.Unsubscribe()
		var hot []hopper.ID
		for range 3 {
			hot = append(hot, enqueue(t, c, "call", "tenant=42", &hopper.EnqueueOptions{Queue: "api", Key: "tenant=42"}))
		}
		enqueue(t, c, "call", "tenant=7", &hopper.EnqueueOptions{Queue: "api", Key: "tenant=7"})
		synctest.Wait()
		const reason = "dropped: key tenant=42 of queue api over its rate 1/1m"
		wantDropped(t, c, sub, reason, hot[1:]...)
		qs, err := c.Queues(ctx)
		if err != nil || len(qs) != 1 || qs[0].KeyRate != (hopper.Rate{N: 1, Period: time.Minute, Burst: 1, Drop: true}) {
			t.Errorf("Queues: %+v, %v; want api at 1/1m per key, dropping", qs, err)
		}
		time.Sleep(time.Minute)
		last := enqueue(t, c, "call", "tenant=42", &hopper.EnqueueOptions{Queue: "api", Key: "tenant=42"})
		synctest.Wait()
		if j, err := c.Get(ctx, last); err != nil || j.State != hopper.StateCompleted {
			t.Errorf("tenant=42's job a minute on: %+v, %v; want completed", j, err)
		}
		if ran := k.runs(); ran["tenant=42"] != 2 || ran["tenant=7"] != 1 {
			t.Errorf("ran %v, want tenant=42 twice (its first job and the one a minute on) and tenant=7 once", ran)
		}
		stopGracefully(t, c)
	})
}

// TestKeyRateDropStep: the step API drops a key's excess as the pool does,
// and ProcessNext passes over the jobs it drops to the next one it may
// start.
func TestKeyRateDropStep(t *testing.T) {
	t.Parallel()
	c := okStepClient(t)
	ctx := context.Background()
	if err := c.SetQueueKeyRate(ctx, "q", hopper.Rate{N: 1, Period: time.Hour, Drop: true}); err != nil {
		t.Fatal(err)
	}
	var d []hopper.ID
	for range 3 {
		d = append(d, enqueue(t, c, "ok", nil, &hopper.EnqueueOptions{Queue: "q", Key: "d"}))
	}
	enqueue(t, c, "ok", nil, &hopper.EnqueueOptions{Queue: "q", Key: "z"})
	at := time.Now().Add(time.Hour)
	for _, want := range []string{"d", "z"} { // keys in turn: the cursor is at z
		if j, ok, err := c.ProcessNext(ctx, at); err != nil || !ok || j.Key != want {
			t.Fatalf("ProcessNext: %+v, %v, %v; want a job of key %s", j, ok, err, want)
		}
	}
	s := enqueue(t, c, "ok", nil, &hopper.EnqueueOptions{Queue: "q", Key: "s"})
	// From z the turn wraps to d, over its rate: d's next job is dropped,
	// and the claim goes on to s.
	if j, ok, err := c.ProcessNext(ctx, at); err != nil || !ok || j.ID != s {
		t.Fatalf("ProcessNext over d's excess: %+v, %v, %v; want job %d of key s", j, ok, err, s)
	}
	j, err := c.Get(ctx, d[1])
	if err != nil || j.State != hopper.StateCancelled || j.LastError != "dropped: key d of queue q over its rate 1/1h" {
		t.Errorf("d's second job: %+v, %v; want cancelled, dropped", j, err)
	}
	if j, err := c.Get(ctx, d[2]); err != nil || j.State != hopper.StateAvailable {
		t.Errorf("d's third job: %+v, %v; want available (the claim stopped at s)", j, err)
	}
	if j, ok, err := c.ProcessNext(ctx, at); err != nil || ok {
		t.Errorf("ProcessNext with only d's excess left: %+v, %v, %v; want nothing run", j, ok, err)
	}
	if j, err := c.Get(ctx, d[2]); err != nil || j.State != hopper.StateCancelled {
		t.Errorf("d's third job: %+v, %v; want dropped", j, err)
	}
}

// TestKeyedQueueRateDrop: a keyed queue (1 per key) whose own rate, 1/1m
// with a burst of 2, drops its excess, worked by a client with 4 workers:
// the claim walks the keys in turn, the first 2 jobs start and the third
// key's job is cancelled with the queue's reason, reported as an
// EventCancelled; the job its key's limit held is dropped once the key is
// free, and a job starts again once the rate allows.
func TestKeyedQueueRateDrop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var k keyRuns
		ws := k.workers()
		c, err := hopper.NewClient(hopper.Config{Store: memstore.New(), Workers: ws, Concurrency: 4, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.StopNow() })
		ctx := context.Background()
		if err := c.SetQueueKeyConcurrency(ctx, "api", 1); err != nil {
			t.Fatal(err)
		}
		if err := c.SetQueueRate(ctx, "api", hopper.Rate{N: 1, Period: time.Minute, Burst: 2, Drop: true}); err != nil {
			t.Fatal(err)
		}
		sub := c.Subscribe(job.EventCancelled)
		defer sub.Unsubscribe()
		call := func(key string) hopper.ID {
			return enqueue(t, c, "call", key, &hopper.EnqueueOptions{Queue: "api", Key: key})
		}
		t42 := []hopper.ID{call("tenant=42"), call("tenant=42")}
		call("tenant=7")
		t9 := call("tenant=9")
		if err := c.Start(); err != nil { // the first claim sees every job
			t.Fatal(err)
		}
		synctest.Wait()
		const reason = "dropped: queue api over its rate 1/1m"
		wantDropped(t, c, sub, reason, t9, t42[1])
		time.Sleep(time.Minute)
		last := call("tenant=9")
		synctest.Wait()
		if j, err := c.Get(ctx, last); err != nil || j.State != hopper.StateCompleted {
			t.Errorf("tenant=9's job a minute on: %+v, %v; want completed", j, err)
		}
		if ran, want := k.runs(), map[string]int{"tenant=42": 1, "tenant=7": 1, "tenant=9": 1}; !maps.Equal(ran, want) {
			t.Errorf("ran %v, want %v", ran, want)
		}
		stopGracefully(t, c)
	})
}

// TestKeyedQueueRateDropStep: ProcessNext passes over the jobs a keyed
// queue's dropping rate drops to the next job it may start.
func TestKeyedQueueRateDropStep(t *testing.T) {
	t.Parallel()
	c := okStepClient(t)
	ctx := context.Background()
	if err := c.SetQueueKeyConcurrency(ctx, "q", 1); err != nil {
		t.Fatal(err)
	}
	if err := c.SetQueueRate(ctx, "q", hopper.Rate{N: 1, Period: time.Hour, Drop: true}); err != nil {
		t.Fatal(err)
	}
	a := enqueue(t, c, "ok", nil, &hopper.EnqueueOptions{Queue: "q", Key: "a"})
	b := enqueue(t, c, "ok", nil, &hopper.EnqueueOptions{Queue: "q", Key: "b"})
	o := enqueue(t, c, "ok", nil, &hopper.EnqueueOptions{Queue: "other"})
	at := time.Now().Add(time.Hour)
	for _, want := range []hopper.ID{a, o} {
		if j, ok, err := c.ProcessNext(ctx, at); err != nil || !ok || j.ID != want {
			t.Fatalf("ProcessNext: %+v, %v, %v; want job %d", j, ok, err, want)
		}
	}
	j, err := c.Get(ctx, b)
	if err != nil || j.State != hopper.StateCancelled || j.LastError != "dropped: queue q over its rate 1/1h" {
		t.Errorf("b's job: %+v, %v; want cancelled, dropped", j, err)
	}
}

// TestKeyRateBad: a bad rate per key is a *FieldError naming its field,
// and changes nothing; the zero Rate clears it.
func TestKeyRateBad(t *testing.T) {
	t.Parallel()
	c := silentClient(t, hopper.Config{})
	ctx := context.Background()
	good := hopper.Rate{N: 5, Period: time.Second, Burst: 2}
	if err := c.SetQueueKeyRate(ctx, "q", good); err != nil {
		t.Fatal(err)
	}
	for _, c2 := range []struct {
		r     hopper.Rate
		field string
	}{
		{hopper.Rate{N: 1}, "key_rate"},
		{hopper.Rate{N: -5, Period: time.Second}, "key_rate"},
		{hopper.Rate{N: 5, Period: time.Second, Burst: -1}, "key_burst"},
	} {
		var fe *hopper.FieldError
		if err := c.SetQueueKeyRate(ctx, "q", c2.r); !errors.As(err, &fe) || fe.Field != c2.field {
			t.Errorf("SetQueueKeyRate(%+v): %v, want a *FieldError on %s", c2.r, err, c2.field)
		}
	}
	var fe *hopper.FieldError
	if err := c.SetQueueKeyRate(ctx, " ", good); !errors.As(err, &fe) || fe.Field != "name" {
		t.Errorf("SetQueueKeyRate(bad name): %v, want a *FieldError on name", err)
	}
	qs, err := c.QueueStates(ctx)
	if err != nil || len(qs) != 1 || qs[0].KeyRate != good {
		t.Fatalf("QueueStates after bad rates: %+v, %v; want q at %v per key", qs, err, good)
	}
	if err := c.SetQueueKeyRate(ctx, "q", hopper.Rate{}); err != nil {
		t.Fatal(err)
	}
	if qs, err := c.QueueStates(ctx); err != nil || len(qs) != 0 {
		t.Errorf("QueueStates after clearing: %+v, %v; want none", qs, err)
	}
}

// okStepClient returns a client (memory store, not started) whose kind
// "ok" succeeds, for the step API.
func okStepClient(t *testing.T) *hopper.Client {
	t.Helper()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "ok", func(ctx context.Context, _ json.RawMessage) (any, error) { return nil, nil }, nil)
	return silentClient(t, hopper.Config{Workers: ws})
}
