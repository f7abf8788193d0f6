package hopper_test

// Tests of a task scheduler's four levels — a priority queue, delayed
// execution, a worker pool, retries into a dead-letter queue — told by the
// statuses their tasks go through. They replay the design document
// "Project 7: Task Scheduler" (seed 003 of docs/architecture.md). The
// seed's priority is "higher = more important"; Hopper runs the LOWER
// number first, so a seed priority p is enqueued as Priority -p throughout.
// The seed's statuses map onto Hopper's states as Client.Status documents:
// pending = scheduled, available or retrying; running; completed; failed =
// dead.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/store/memstore"
)

// prioritizedTask is the seed's Task: a name, a seed priority (higher = more
// important) and a callback.
type prioritizedTask struct {
	name     string
	priority int
	callback hopper.Func
}

// submitTask enqueues task after delay, mapping its priority by negation.
func submitTask(t *testing.T, c *hopper.Client, rec *recorder, task prioritizedTask, delay time.Duration) hopper.ID {
	t.Helper()
	cb := task.callback
	return enqueueFunc(t, c, func(ctx context.Context) (any, error) {
		rec.add(task.name)
		if cb == nil {
			return task.name, nil
		}
		return cb(ctx)
	}, &hopper.EnqueueOptions{Priority: -task.priority, Delay: delay})
}

// statusName maps a Hopper state onto the seed's statuses.
func statusName(s hopper.State) string {
	switch s {
	case hopper.StateScheduled, hopper.StateAvailable, hopper.StateRetrying:
		return "pending"
	case hopper.StateRunning:
		return "running"
	case hopper.StateCompleted:
		return "completed"
	case hopper.StateDead:
		return "failed"
	}
	return s.String()
}

// pendingSize is the seed's size(): the number of pending jobs.
func pendingSize(t *testing.T, c *hopper.Client) int {
	t.Helper()
	js, err := c.List(context.Background(), hopper.ListOptions{
		States: []hopper.State{hopper.StateScheduled, hopper.StateAvailable, hopper.StateRetrying},
	})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return len(js)
}

// TestPriorityTiesFIFOAndNegative: "high" (10 → -10) runs before "med" (5 →
// -5) and "low" (1 → -1); ties run FIFO; negative seed priorities work; an
// empty queue runs nothing.
func TestPriorityTiesFIFOAndNegative(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := silentClient(t, hopper.Config{})
	defer stopGracefully(t, c)
	var rec recorder
	submitTask(t, c, &rec, prioritizedTask{name: "low", priority: 1}, 0)
	submitTask(t, c, &rec, prioritizedTask{name: "high", priority: 10}, 0)
	submitTask(t, c, &rec, prioritizedTask{name: "med", priority: 5}, 0)
	j, ok, err := c.ProcessNext(ctx, farFuture) // run_next()
	if err != nil || !ok {
		t.Fatalf("ProcessNext: %v, %v", ok, err)
	}
	if string(j.Result) != `"high"` || j.Priority != -10 {
		t.Errorf("first task: got result %s priority %d, want \"high\", -10", j.Result, j.Priority)
	}
	if n := pendingSize(t, c); n != 2 {
		t.Errorf("size: got %d, want 2", n)
	}

	// Ties are FIFO; negative seed priorities rank below zero.
	submitTask(t, c, &rec, prioritizedTask{name: "neg", priority: -7}, 0)
	submitTask(t, c, &rec, prioritizedTask{name: "tie1", priority: 3}, 0)
	submitTask(t, c, &rec, prioritizedTask{name: "tie2", priority: 3}, 0)
	submitTask(t, c, &rec, prioritizedTask{name: "tie3", priority: 3}, 0)
	if _, err := c.RunReady(ctx, farFuture); err != nil {
		t.Fatalf("RunReady: %v", err)
	}
	want := []string{"high", "med", "tie1", "tie2", "tie3", "low", "neg"}
	if got := rec.get(); !slices.Equal(got, want) {
		t.Errorf("order: got %v, want %v", got, want)
	}
	if _, ok, err := c.ProcessNext(ctx, farFuture); ok || err != nil { // run_next() on empty
		t.Errorf("ProcessNext on an empty queue: got %v, %v; want false, nil", ok, err)
	}
}

// TestDelayRunAtAndCancel: "now" runs at once and "later" (5s
// delay) does not; submit_at takes an absolute time; cancel is true for a
// pending task and false for an executed or unknown one. The bubble fixes
// the clock that Delay is measured from; jobs are run with RunReady.
func TestDelayRunAtAndCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := silentClient(t, hopper.Config{})
		defer stopGracefully(t, c)
		var rec recorder
		t0 := time.Now()
		nowID := submitTask(t, c, &rec, prioritizedTask{name: "now", priority: 1}, 0)
		submitTask(t, c, &rec, prioritizedTask{name: "later", priority: 10}, 5*time.Second)
		ready, err := c.RunReady(ctx, t0)
		if err != nil || len(ready) != 1 || string(ready[0].Result) != `"now"` {
			t.Fatalf("run_ready at t0: got %d jobs (err %v), want only \"now\"", len(ready), err)
		}
		if ready, _ := c.RunReady(ctx, t0.Add(4999*time.Millisecond)); len(ready) != 0 {
			t.Errorf("run_ready at t0+4.999s: got %d jobs, want 0", len(ready))
		}
		if ready, _ := c.RunReady(ctx, t0.Add(5*time.Second)); len(ready) != 1 {
			t.Errorf("run_ready at t0+5s: got %d jobs, want 1 (\"later\")", len(ready))
		}

		// submit_at: an absolute time.
		at := t0.Add(time.Minute)
		atID := enqueueFunc(t, c, recordAs(&rec, "at"), &hopper.EnqueueOptions{RunAt: at})
		if ready, _ := c.RunReady(ctx, at.Add(-time.Second)); len(ready) != 0 {
			t.Errorf("submit_at: ran %d jobs before its time", len(ready))
		}
		if ready, _ := c.RunReady(ctx, at); len(ready) != 1 || ready[0].ID != atID {
			t.Errorf("submit_at: got %d jobs at its time, want it", len(ready))
		}

		pending := submitTask(t, c, &rec, prioritizedTask{name: "cancelled", priority: 1}, time.Hour)
		for _, tc := range []struct {
			what string
			id   hopper.ID
			want bool
		}{{"pending", pending, true}, {"executed", nowID, false}, {"nonexistent", 424242, false}} {
			if got, err := c.Cancel(ctx, tc.id); got != tc.want || err != nil {
				t.Errorf("cancel(%s): got %v, %v; want %v, nil", tc.what, got, err, tc.want)
			}
		}
		c.RunReady(ctx, t0.Add(24*time.Hour))
		if got, want := rec.get(), []string{"now", "later", "at"}; !slices.Equal(got, want) {
			t.Errorf("ran %v, want %v", got, want)
		}
	})
}

// TestWorkerPoolStatusesAndStop: 3 workers run 5 tasks that sleep 100ms and
// return n*2; after 500ms all are completed with their results; each went
// pending → running → completed; stop waits for running tasks and starts no
// pending one.
func TestWorkerPoolStatusesAndStop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := silentClient(t, hopper.Config{Concurrency: 3})
		sub := c.Subscribe()
		startClient(t, c)
		var running, peak atomic.Int32
		var ids []hopper.ID
		for i := range 5 {
			ids = append(ids, enqueueFunc(t, c, func(context.Context) (any, error) {
				n := running.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(100 * time.Millisecond) // await asyncio.sleep(0.1)
				running.Add(-1)
				return i * 2, nil
			}, &hopper.EnqueueOptions{Priority: -1}))
		}
		time.Sleep(500 * time.Millisecond)
		for i, id := range ids {
			if st, err := c.Status(ctx, id); err != nil || statusName(st) != "completed" {
				t.Errorf("task %d: status %s (err %v), want completed", i, st, err)
			}
			j := waitDone(t, c, id) // get_result
			var got int
			if err := json.Unmarshal(j.Result, &got); err != nil || got != 2*i {
				t.Errorf("task %d: result %s, want %d", i, j.Result, 2*i)
			}
		}
		if p := peak.Load(); p != 3 {
			t.Errorf("at most %d tasks ran at once, want 3", p)
		}
		stopGracefully(t, c)
		statuses := map[hopper.ID][]string{}
		for ev := range sub.C { // closed by Stop
			statuses[ev.Job.ID] = append(statuses[ev.Job.ID], statusName(ev.Job.State))
		}
		for _, id := range ids {
			if got, want := statuses[id], []string{"pending", "running", "completed"}; !slices.Equal(got, want) {
				t.Errorf("job %d: statuses %v, want %v", id, got, want)
			}
		}
	})
	t.Run("stop", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			ctx := context.Background()
			st := memstore.New()
			c := silentClient(t, hopper.Config{Store: st, Concurrency: 1})
			var rec recorder
			var ids []hopper.ID
			for i := range 3 {
				ids = append(ids, enqueueFunc(t, c, func(context.Context) (any, error) {
					rec.add(fmt.Sprint(i))
					time.Sleep(100 * time.Millisecond)
					return i, nil
				}, nil))
			}
			startClient(t, c)
			synctest.Wait() // task 0 is running
			stopGracefully(t, c)
			if got := rec.get(); !slices.Equal(got, []string{"0"}) {
				t.Errorf("started %v, want only [0]", got)
			}
			for i, id := range ids {
				j, err := st.Get(ctx, id)
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				want := "pending"
				if i == 0 {
					want = "completed"
				}
				if got := statusName(j.State); got != want || (i > 0 && j.Attempt != 0) {
					t.Errorf("task %d after stop: %s, attempt %d; want %s", i, got, j.Attempt, want)
				}
			}
		})
	})
}

// TestRetryDeadLetterAndRetryDead: with max_retries=3 (4 attempts) and backoff
// 0.1 × 2^attempt (backoff.Doubling(100ms): 200ms, 400ms, …), a flaky task
// succeeds on its 3rd attempt; a task that always fails ends "failed" (dead)
// in the DLQ with its retry count on the job; retry_dlq re-submits it with
// its attempts reset.
func TestRetryDeadLetterAndRetryDead(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := backoff.Doubling(100 * time.Millisecond)
		c := silentClient(t, hopper.Config{Concurrency: 1, Defaults: hopper.EnqueueOptions{MaxAttempts: 1 + 3, Retry: &p}})
		startClient(t, c)
		var attemptCount int
		var mu sync.Mutex
		flaky := enqueueFunc(t, c, func(context.Context) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			attemptCount++
			if attemptCount < 3 {
				return nil, errors.New("Temporary failure")
			}
			return "success", nil
		}, &hopper.EnqueueOptions{Priority: -1})
		time.Sleep(2 * time.Second)
		if st, _ := c.Status(ctx, flaky); statusName(st) != "completed" {
			t.Errorf("flaky: status %s, want completed", st)
		}
		j := waitDone(t, c, flaky)
		mu.Lock()
		if attemptCount != 3 || j.Attempt != 3 || string(j.Result) != `"success"` {
			t.Errorf("flaky: %d calls, Attempt %d, result %s; want 3, 3, \"success\"", attemptCount, j.Attempt, j.Result)
		}
		mu.Unlock()
		if len(j.Attempts) == 3 && (j.Attempts[0].Backoff != 200*time.Millisecond || j.Attempts[1].Backoff != 400*time.Millisecond) {
			t.Errorf("backoffs: got %s, %s; want 200ms, 400ms", j.Attempts[0].Backoff, j.Attempts[1].Backoff)
		}

		var fixed atomic.Bool
		var seen []int // attempt numbers, read from the job in the handler
		broken := enqueueFunc(t, c, func(ctx context.Context) (any, error) {
			mu.Lock()
			seen = append(seen, hopper.JobFromContext(ctx).Attempt)
			mu.Unlock()
			if fixed.Load() {
				return "ok", nil
			}
			return nil, errors.New("always fails")
		}, nil)
		d := waitDone(t, c, broken)
		if statusName(d.State) != "failed" || d.Attempt != 4 {
			t.Errorf("broken: status %s attempt %d, want failed after 4 attempts", statusName(d.State), d.Attempt)
		}
		dlq, err := c.DeadJobs(ctx, 0, 0)
		if err != nil || len(dlq) != 1 || dlq[0].ID != broken {
			t.Fatalf("get_dlq: got %v (err %v), want [job %d]", dlq, err, broken)
		}
		fixed.Store(true)
		if n, err := c.RetryAllDead(ctx); n != 1 || err != nil {
			t.Fatalf("retry_dlq: got %d, %v; want 1, nil", n, err)
		}
		if r := waitDone(t, c, broken); r.State != hopper.StateCompleted || r.Attempt != 1 {
			t.Errorf("after retry_dlq: state %s attempt %d, want completed as attempt 1", r.State, r.Attempt)
		}
		mu.Lock()
		if want := []int{1, 2, 3, 4, 1}; !slices.Equal(seen, want) {
			t.Errorf("attempt numbers seen by the handler: %v, want %v", seen, want)
		}
		mu.Unlock()
		if dlq, _ := c.DeadJobs(ctx, 0, 0); len(dlq) != 0 {
			t.Errorf("DLQ after the retry: %d jobs, want 0", len(dlq))
		}
		stopGracefully(t, c)
	})
}
