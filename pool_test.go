package hopper_test

// Tests of a started client's pool: priority order, retries with
// exponential backoff into the dead-letter queue, concurrent enqueues,
// graceful and forceful shutdown, the dead-letter queue's retention, the
// OnDead hook and poison pills. They replay the design document "Lab 04 —
// Task Scheduler" (seed 000 of docs/architecture.md) and its follow-ups 9
// (DLQ retention), 12 (shutdown), 13 (poison pills) and the DLQ alert
// event. Lower priority number runs first there, as in Hopper.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/store/memstore"
)

// TestPoolPriorityAndDeadLetter is the seed's example: "b" (priority 0) runs before "a"
// (priority 1), and a failing task with max_attempts=2 fails twice and lands
// in the DLQ with attempts=2 and its last error. The seed uses 2 workers; one
// is used here so that the run order is observable.
func TestPoolPriorityAndDeadLetter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := backoff.Exponential(100*time.Millisecond, 10*time.Second) // base_backoff 0.1, jittered
		c := silentClient(t, hopper.Config{Concurrency: 1, Defaults: hopper.EnqueueOptions{Retry: &p, MaxAttempts: 3}})
		var rec recorder
		a := enqueueFunc(t, c, recordAs(&rec, "a"), &hopper.EnqueueOptions{Priority: 1})
		b := enqueueFunc(t, c, recordAs(&rec, "b"), &hopper.EnqueueOptions{Priority: 0})
		failing := enqueueFunc(t, c, func(context.Context) (any, error) {
			rec.add("failing")
			return nil, errors.New("RuntimeError: boom")
		}, &hopper.EnqueueOptions{Priority: 2, MaxAttempts: 2})
		startClient(t, c)
		if ja, jb := waitDone(t, c, a), waitDone(t, c, b); ja.State != hopper.StateCompleted || jb.State != hopper.StateCompleted {
			t.Errorf("a, b: got states %s, %s; want completed", ja.State, jb.State)
		}
		f := waitDone(t, c, failing)
		if f.State != hopper.StateDead || f.Attempt != 2 || len(f.Attempts) != 2 {
			t.Errorf("failing task: got state %s, attempt %d, %d attempts recorded; want dead, 2, 2",
				f.State, f.Attempt, len(f.Attempts))
		}
		if got, want := rec.get(), []string{"b", "a", "failing", "failing"}; !slices.Equal(got, want) {
			t.Errorf("run order: got %v, want %v", got, want)
		}
		if got := deadJobIDs(t, c); !slices.Equal(got, []hopper.ID{failing}) || !strings.Contains(f.LastError, "boom") {
			t.Errorf("dead letters: got %v, last error %q; want [%d] with last_error containing boom", got, f.LastError, failing)
		}
		stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second) // shutdown(timeout=5.0)
		defer cancel()
		if err := c.Stop(stopCtx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
}

// TestPoolRunsByPriority is the seed's test_priority_order: priorities
// [3, 1, 2] with one worker run as [1, 2, 3]. The jobs are enqueued before
// Start so that all of them are ready when the worker picks the first.
func TestPoolRunsByPriority(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := silentClient(t, hopper.Config{Concurrency: 1})
		var rec recorder
		var ids []hopper.ID
		for _, p := range []int{3, 1, 2} {
			ids = append(ids, enqueueFunc(t, c, recordAs(&rec, fmt.Sprint(p)), &hopper.EnqueueOptions{Priority: p}))
		}
		startClient(t, c)
		for _, id := range ids {
			waitDone(t, c, id)
		}
		if got, want := rec.get(), []string{"1", "2", "3"}; !slices.Equal(got, want) {
			t.Errorf("order: got %v, want %v", got, want)
		}
		stopGracefully(t, c)
	})
}

// TestPoolRetriesThenDeadLetters is the seed's test_retry_then_dlq: always_fail with
// max_attempts=3 runs 3 times and leaves one dead letter.
func TestPoolRetriesThenDeadLetters(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := backoff.Exponential(10*time.Millisecond, time.Second) // base_backoff=0.01
		c := silentClient(t, hopper.Config{Concurrency: 1, Defaults: hopper.EnqueueOptions{Retry: &p}})
		var attempts atomic.Int32
		id := enqueueFunc(t, c, func(context.Context) (any, error) {
			attempts.Add(1)
			return nil, errors.New("boom")
		}, &hopper.EnqueueOptions{MaxAttempts: 3})
		startClient(t, c)
		if j := waitDone(t, c, id); attempts.Load() != 3 || j.State != hopper.StateDead {
			t.Errorf("got %d attempts and state %s, want 3 and dead", attempts.Load(), j.State)
		}
		if got := deadJobIDs(t, c); !slices.Equal(got, []hopper.ID{id}) {
			t.Errorf("dead letters: got %v, want [%d]", got, id)
		}
		stopGracefully(t, c)
	})
}

// TestPoolConcurrentEnqueuesRunOnce is the seed's test_concurrent_submit: 4
// goroutines submit 50 jobs each to 4 workers; all 200 run, once each.
func TestPoolConcurrentEnqueuesRunOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := silentClient(t, hopper.Config{Concurrency: 4})
		startClient(t, c)
		var mu sync.Mutex
		results := make(map[[2]int]int)
		var ids []hopper.ID
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				for j := range 50 {
					key := [2]int{i, j}
					res, err := c.EnqueueFunc(context.Background(), func(context.Context) (any, error) {
						mu.Lock()
						results[key]++
						mu.Unlock()
						return nil, nil
					}, nil)
					if err != nil {
						t.Errorf("EnqueueFunc: %v", err)
						return
					}
					mu.Lock()
					ids = append(ids, res.ID)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		for _, id := range ids {
			waitDone(t, c, id)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(ids) != 200 || len(results) != 200 {
			t.Fatalf("got %d jobs enqueued and %d distinct results, want 200 and 200", len(ids), len(results))
		}
		for k, n := range results {
			if n != 1 {
				t.Errorf("job %v ran %d times, want 1", k, n)
			}
		}
		stopGracefully(t, c)
	})
}

// TestReadyJobsByPriorityNotReadyTime checks the CORRECT behaviour, not the seed's: the
// seed keys its heap by (ready_at, priority), so a low-priority job that
// became ready earlier runs before an urgent job that became ready later,
// even when both are ready. Hopper orders the jobs that are ready by priority
// first: low-priority A (ready at t) and urgent B (ready at t+1s), stepped to
// t+2s, run B first.
func TestReadyJobsByPriorityNotReadyTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := silentClient(t, hopper.Config{})
	defer stopGracefully(t, c)
	var rec recorder
	tA := farFuture
	enqueueFunc(t, c, recordAs(&rec, "A"), &hopper.EnqueueOptions{Priority: 10, RunAt: tA})
	enqueueFunc(t, c, recordAs(&rec, "B"), &hopper.EnqueueOptions{Priority: 0, RunAt: tA.Add(time.Second)})
	if ran, err := c.RunReady(ctx, tA.Add(2*time.Second)); err != nil || len(ran) != 2 {
		t.Fatalf("RunReady: ran %d jobs (err %v), want 2", len(ran), err)
	}
	if got, want := rec.get(), []string{"B", "A"}; !slices.Equal(got, want) {
		t.Errorf("order: got %v, want %v (urgent first once both are ready)", got, want)
	}
}

// TestGracefulAndForcefulShutdown is follow-up 12. Graceful: stop
// accepting, let the running job finish, start nothing new. Forceful (or a
// graceful stop whose deadline passes): the running job's context is
// cancelled and it goes back to waiting without its attempt being counted.
func TestGracefulAndForcefulShutdown(t *testing.T) {
	t.Parallel()
	// run starts one worker on its own store (readable after Stop), busy with
	// a job that takes 10s unless its context is cancelled (a second run
	// returns at once), with a second job waiting; it then calls stop and
	// returns the store, the busy job's ID and how long stop took.
	run := func(t *testing.T, stop func(*hopper.Client) error) (*memstore.Store, hopper.ID, time.Duration) {
		ctx := context.Background()
		st := memstore.New()
		c := silentClient(t, hopper.Config{Store: st, Concurrency: 1})
		var runs atomic.Int32
		busy := enqueueFunc(t, c, func(ctx context.Context) (any, error) {
			if runs.Add(1) > 1 {
				return "second run", nil
			}
			select {
			case <-time.After(10 * time.Second):
				return "done", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}, nil)
		var waitingRan atomic.Bool
		waiting := enqueueFunc(t, c, func(context.Context) (any, error) {
			waitingRan.Store(true)
			return nil, nil
		}, nil)
		startClient(t, c)
		synctest.Wait() // the worker is inside the busy job
		start := time.Now()
		if err := stop(c); err != nil {
			t.Fatalf("stop: %v", err)
		}
		took := time.Since(start)
		if _, err := c.EnqueueFunc(ctx, recordAs(new(recorder), "x"), nil); !errors.Is(err, hopper.ErrClosed) {
			t.Errorf("Enqueue after Stop: got %v, want ErrClosed", err)
		}
		if w, err := st.Get(ctx, waiting); err != nil || w.State != hopper.StateAvailable || w.Attempt != 0 || waitingRan.Load() {
			t.Errorf("waiting job: got %+v (err %v, ran %v), want available, never started", w, err, waitingRan.Load())
		}
		return st, busy, took
	}
	stopWithin := func(d time.Duration) func(*hopper.Client) error {
		return func(c *hopper.Client) error {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			return c.Stop(ctx)
		}
	}
	// released checks that the busy job went back to waiting without its
	// attempt counting, and that it then runs as attempt 1.
	released := func(t *testing.T, st *memstore.Store, id hopper.ID) {
		j, err := st.Get(context.Background(), id)
		if err != nil || j.State != hopper.StateAvailable || j.Attempt != 0 {
			t.Fatalf("interrupted job: got %+v (err %v), want available, attempt 0", j, err)
		}
		if len(j.Attempts) != 1 || j.Attempts[0].Outcome != "released" {
			t.Errorf("interrupted job history: got %+v, want one released attempt", j.Attempts)
		}
		c2 := silentClient(t, hopper.Config{Store: st})
		j, ok, err := c2.ProcessNext(context.Background(), time.Now())
		if err != nil || !ok || j.ID != id || j.State != hopper.StateCompleted || j.Attempt != 1 {
			t.Errorf("rerun: got %+v, %v, %v; want job %d completed as attempt 1", j, ok, err, id)
		}
		stopGracefully(t, c2)
	}
	t.Run("graceful", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			st, id, took := run(t, stopWithin(time.Minute))
			if took != 10*time.Second {
				t.Errorf("graceful Stop took %s, want 10s (the rest of the running job)", took)
			}
			if j, err := st.Get(context.Background(), id); err != nil || j.State != hopper.StateCompleted || string(j.Result) != `"done"` {
				t.Errorf("running job: got %+v (err %v), want completed with result \"done\"", j, err)
			}
		})
	})
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			st, id, took := run(t, stopWithin(time.Second))
			if took != time.Second {
				t.Errorf("Stop with a 1s deadline took %s, want 1s", took)
			}
			released(t, st, id)
		})
	})
	t.Run("forceful", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			st, id, took := run(t, (*hopper.Client).StopNow)
			if took != 0 {
				t.Errorf("StopNow took %s, want 0 (immediate)", took)
			}
			released(t, st, id)
		})
	})
}

// TestDeadLetterRetention is follow-up 9: the DLQ is capped (DeadMaxCount,
// oldest dropped) and dead jobs expire (DeadRetention). The retention cleaner
// runs once a minute, so fake time is advanced past its ticks.
func TestDeadLetterRetention(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := silentClient(t, hopper.Config{DeadMaxCount: 2, DeadRetention: 5 * time.Minute})
		var ids []hopper.ID
		for i := 1; i <= 3; i++ { // they die at +1s, +2s and +3s
			ids = append(ids, enqueueFunc(t, c, func(context.Context) (any, error) {
				return nil, errors.New("boom")
			}, &hopper.EnqueueOptions{MaxAttempts: 1, Delay: time.Duration(i) * time.Second}))
		}
		startClient(t, c)
		deadIDs := func() []hopper.ID {
			synctest.Wait()
			return deadJobIDs(t, c)
		}
		time.Sleep(3 * time.Second)
		if got := deadIDs(); !slices.Equal(got, ids) {
			t.Fatalf("DLQ at +3s: got %v, want %v", got, ids)
		}
		time.Sleep(58 * time.Second) // +61s: past the cleaner's tick at +1m
		if got, want := deadIDs(), ids[1:]; !slices.Equal(got, want) {
			t.Errorf("DLQ after the cap of 2 applied: got %v, want %v (oldest dropped)", got, want)
		}
		time.Sleep(4*time.Minute + 30*time.Second) // +5m31s: nothing is 5m old at the +5m tick
		if got, want := deadIDs(), ids[1:]; !slices.Equal(got, want) {
			t.Errorf("DLQ at +5m31s: got %v, want %v", got, want)
		}
		time.Sleep(time.Minute) // +6m31s: the +6m tick purged jobs dead before +1m
		if got := deadIDs(); len(got) != 0 {
			t.Errorf("DLQ after the 5m retention: got %v, want empty", got)
		}
		stopGracefully(t, c)
	})
}

// TestOnDeadOncePerDeadJob checks the per-job DLQ event the seed asks for
// ("always emit a per-task DLQ event so downstream alerting can fire"):
// Config.OnDead fires once for each job that dies, and for no other.
func TestOnDeadOncePerDeadJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var got []*hopper.Job
	c := silentClient(t, hopper.Config{OnDead: func(j *hopper.Job) {
		mu.Lock()
		got = append(got, j)
		mu.Unlock()
	}})
	defer stopGracefully(t, c)
	fail := func(context.Context) (any, error) { return nil, errors.New("boom") }
	ok := enqueueFunc(t, c, recordAs(new(recorder), "ok"), nil)
	retried := enqueueFunc(t, c, fail, &hopper.EnqueueOptions{MaxAttempts: 5})
	exhausted := enqueueFunc(t, c, fail, &hopper.EnqueueOptions{MaxAttempts: 1})
	permanent := enqueueFunc(t, c, func(context.Context) (any, error) {
		return nil, hopper.Permanent(errors.New("bad payload"))
	}, nil)
	if _, err := c.RunReady(ctx, farFuture); err != nil {
		t.Fatalf("RunReady: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	var ids []hopper.ID
	for _, j := range got {
		ids = append(ids, j.ID)
		if j.State != hopper.StateDead || j.LastError == "" {
			t.Errorf("OnDead got job %d in state %s with last error %q, want dead with an error", j.ID, j.State, j.LastError)
		}
	}
	slices.Sort(ids)
	if want := []hopper.ID{exhausted, permanent}; !slices.Equal(ids, want) {
		t.Errorf("OnDead fired for %v, want %v (not for completed %d or retrying %d)", ids, want, ok, retried)
	}
}

// TestPoisonPillDeadAfterMaxCrashes is follow-up 13: a job whose worker dies under it
// MaxCrashes times in a row goes to the DLQ (and fires OnDead), whatever
// attempts remain. The client works another queue, so it only rescues.
func TestPoisonPillDeadAfterMaxCrashes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		var dead atomic.Int32
		c := silentClient(t, hopper.Config{Store: st, MaxCrashes: 3, Queues: map[string]hopper.QueueConfig{"other": {}},
			OnDead: func(*hopper.Job) { dead.Add(1) }})
		id := enqueueFunc(t, c, recordAs(new(recorder), "pill"), &hopper.EnqueueOptions{MaxAttempts: 10})
		startClient(t, c)
		for crash := 1; crash <= 3; crash++ {
			crashMidJob(t, st, time.Second)
			time.Sleep(11 * time.Second) // the rescuer runs every 10s
			synctest.Wait()
			j, err := st.Get(context.Background(), id)
			want := hopper.StateAvailable
			if crash == 3 {
				want = hopper.StateDead
			}
			if err != nil || j.State != want || j.Crashes != crash {
				t.Fatalf("after crash %d: got %+v (err %v), want %s", crash, j, err, want)
			}
			if crash == 3 && !strings.Contains(j.LastError, "poison pill") {
				t.Errorf("last error %q, want it to name the poison pill", j.LastError)
			}
		}
		if n := dead.Load(); n != 1 {
			t.Errorf("OnDead fired %d times, want 1", n)
		}
		stopGracefully(t, c)
	})
}
