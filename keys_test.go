package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/store/memstore"
)

// TestKeyConcurrency: a queue limited to 2 jobs per key, across two
// clients sharing a store, 8 workers each: the handlers never see more
// than 2 of one key at once; a cold key's job enqueued behind the hot
// key's backlog starts at once; a held job says why it waits; each freed
// key slot starts the next job of the key without a poll.
func TestKeyConcurrency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		running, peak := map[string]int{}, map[string]int{}
		started := map[string]time.Time{}
		var lastEnd time.Time
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "work", func(ctx context.Context, args json.RawMessage) (any, error) {
			var a struct{ Key string }
			_ = json.Unmarshal(args, &a)
			mu.Lock()
			running[a.Key]++
			peak[a.Key] = max(peak[a.Key], running[a.Key])
			if _, ok := started[a.Key]; !ok {
				started[a.Key] = time.Now()
			}
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
			mu.Lock()
			running[a.Key]--
			lastEnd = time.Now()
			mu.Unlock()
			return nil, nil
		}, nil)
		ms := memstore.New()
		a := newClient(t, hopper.Config{Store: ms, Workers: ws, Concurrency: 8})
		b := newClient(t, hopper.Config{Store: ms, Workers: ws, Concurrency: 8})
		ctx := context.Background()
		if err := a.SetQueueKeyConcurrency(ctx, "api", 2); err != nil {
			t.Fatal(err)
		}
		if err := a.PauseQueue(ctx, "api"); err != nil { // enqueue the backlog first
			t.Fatal(err)
		}
		var last hopper.ID
		for range 100 {
			last = enqueue(t, a, "work", map[string]string{"Key": "hot"}, &hopper.EnqueueOptions{Queue: "api", Key: "hot"})
		}
		enqueue(t, a, "work", map[string]string{"Key": "cold"}, &hopper.EnqueueOptions{Queue: "api", Key: "cold"})
		begin := time.Now()
		if err := a.ResumeQueue(ctx, "api"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		j, err := a.Get(ctx, last)
		if err != nil {
			t.Fatal(err)
		}
		if why, err := b.WaitReason(ctx, j); err != nil || why != "key hot at its limit of 2" {
			t.Errorf("WaitReason of a held job: %q, %v", why, err)
		}
		if qs, err := b.QueueStates(ctx); err != nil || len(qs) != 1 || qs[0].KeyConcurrency != 2 {
			t.Errorf("QueueStates: %+v, %v; want api with 2 per key", qs, err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if peak["hot"] != 2 || peak["cold"] != 1 {
			t.Errorf("peak per key %v, want hot 2, cold 1", peak)
		}
		if d := started["cold"].Sub(begin); d != 0 {
			t.Errorf("the cold key's job started %v after the resume, behind the hot backlog; want at once", d)
		}
		// 100 jobs of 10ms, 2 at a time: 500ms of fake time, no poll.
		if d := lastEnd.Sub(begin); d > 500*time.Millisecond {
			t.Errorf("100 jobs of 10ms, 2 at a time, took %v, want 500ms: a freed key slot waited", d)
		}
		stopGracefully(t, a)
		stopGracefully(t, b)
	})
}

// TestHoldKey: a handler's HoldKey snoozes its job without counting the
// attempt and holds its key: the key's other job waits until the hold
// ends and says why, while another key's job runs.
func TestHoldKey(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var order []string
		calls := 0
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "call", func(ctx context.Context, args json.RawMessage) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			var a struct{ N string }
			_ = json.Unmarshal(args, &a)
			calls++
			if calls == 1 {
				return nil, hopper.HoldKey(time.Minute)
			}
			order = append(order, fmt.Sprintf("%s@%s", a.N, time.Now().UTC().Format("15:04:05")))
			return nil, nil
		}, nil)
		c := newClient(t, hopper.Config{Workers: ws, Concurrency: 1})
		ctx := context.Background()
		start := time.Now().UTC()
		first := enqueue(t, c, "call", map[string]string{"N": "t1"}, &hopper.EnqueueOptions{Key: "tenant=1"})
		synctest.Wait()
		second := enqueue(t, c, "call", map[string]string{"N": "t1b"}, &hopper.EnqueueOptions{Key: "tenant=1"})
		enqueue(t, c, "call", map[string]string{"N": "t2"}, &hopper.EnqueueOptions{Key: "tenant=2"})
		synctest.Wait()
		j, err := c.Get(ctx, second)
		if err != nil {
			t.Fatal(err)
		}
		want := "key tenant=1 held until " + start.Add(time.Minute).Format(time.RFC3339)
		if why, err := c.WaitReason(ctx, j); err != nil || why != want {
			t.Errorf("WaitReason: %q, %v; want %q", why, err, want)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		f, err := c.Get(ctx, first)
		if err != nil || f.State != hopper.StateCompleted || f.Attempt != 1 {
			t.Errorf("held job: %+v, %v; want completed at its first counted attempt", f, err)
		}
		mu.Lock()
		got := strings.Join(order, " ")
		mu.Unlock()
		at := func(d time.Duration) string { return start.Add(d).Format("15:04:05") }
		// At the hold's end the key's jobs run in claim order: t1b's run-at
		// is its enqueue, t1's the end of its snooze.
		if want := "t2@" + at(0) + " t1b@" + at(time.Minute) + " t1@" + at(time.Minute); got != want {
			t.Errorf("runs %q, want %q", got, want)
		}
		stopGracefully(t, c)
	})
}

// TestPauseKeyStep: the step API obeys a key's pause and its limit.
func TestPauseKeyStep(t *testing.T) {
	t.Parallel()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "ok", func(ctx context.Context, _ json.RawMessage) (any, error) { return nil, nil }, nil)
	c := silentClient(t, hopper.Config{Workers: ws})
	ctx := context.Background()
	id := enqueue(t, c, "ok", nil, &hopper.EnqueueOptions{Queue: "q", Key: "k"})
	if err := c.PauseKey(ctx, "q", "k"); err != nil {
		t.Fatal(err)
	}
	if j, ok, err := c.ProcessNext(ctx, farFuture); err != nil || ok {
		t.Fatalf("ProcessNext with the key paused: %v, %v, %v; want nothing", j, ok, err)
	}
	j, _ := c.Get(ctx, id)
	if why, err := c.WaitReason(ctx, j); err != nil || why != "key k paused" {
		t.Errorf("WaitReason: %q, %v", why, err)
	}
	if qs, err := c.Queues(ctx); err != nil || len(qs) != 1 || qs[0].KeyHeld != 1 || qs[0].Held != 0 {
		t.Errorf("Queues with the key paused: %+v, %v; want its job held by its key", qs, err)
	}
	if k, err := c.Key(ctx, "q", "k"); err != nil || !k.Paused || k.Queue != "q" || k.Key != "k" {
		t.Errorf("Key(q, k) while paused: %+v, %v; want it paused", k, err)
	}
	if err := c.ResumeKey(ctx, "q", "k"); err != nil {
		t.Fatal(err)
	}
	if qs, err := c.Queues(ctx); err != nil || len(qs) != 1 || qs[0].KeyHeld != 0 {
		t.Errorf("Queues after the resume: %+v, %v; want no job held by its key", qs, err)
	}
	if k, err := c.Key(ctx, "q", "k"); err != nil || k != (hopper.KeyInfo{Queue: "q", Key: "k"}) {
		t.Errorf("Key(q, k) after the resume: %+v, %v; want no state", k, err)
	}
	if j, ok, err := c.ProcessNext(ctx, farFuture); err != nil || !ok || j.ID != id {
		t.Fatalf("ProcessNext after the resume: %v, %v, %v; want job %d", j, ok, err, id)
	}
	if ks, err := c.Keys(ctx, ""); err != nil || len(ks) != 0 {
		t.Errorf("Keys after the resume: %+v, %v; want none", ks, err)
	}
}

// TestKeyBadInput: a bad key or limit is a *FieldError naming its field.
func TestKeyBadInput(t *testing.T) {
	t.Parallel()
	c := silentClient(t, hopper.Config{})
	ctx := context.Background()
	var fe *hopper.FieldError
	if err := c.PauseKey(ctx, "q", ""); !errors.As(err, &fe) || fe.Field != "key" {
		t.Errorf("PauseKey(\"\"): %v, want a *FieldError on key", err)
	}
	if err := c.SetQueueKeyConcurrency(ctx, "q", -1); !errors.As(err, &fe) || fe.Field != "key_concurrency" {
		t.Errorf("SetQueueKeyConcurrency(-1): %v, want a *FieldError on key_concurrency", err)
	}
	if _, err := c.Key(ctx, "q", ""); !errors.As(err, &fe) || fe.Field != "key" {
		t.Errorf("Key(q, \"\"): %v, want a *FieldError on key", err)
	}
	if _, err := c.Key(ctx, "", "k"); !errors.As(err, &fe) || fe.Field != "queue" {
		t.Errorf("Key(\"\", k): %v, want a *FieldError on queue", err)
	}
	_, err := c.Enqueue(ctx, "x", nil, &hopper.EnqueueOptions{Key: strings.Repeat("k", 1025)})
	if !errors.As(err, &fe) || fe.Field != "key" {
		t.Errorf("Enqueue with a 1025-byte key: %v, want a *FieldError on key", err)
	}
}
