package hopper_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
)

// debounceClient returns a client whose kind "sync" records the args and
// the (fake) time of each run.
func debounceClient(t *testing.T) (*hopper.Client, *[]int, *[]time.Time) {
	t.Helper()
	var args []int
	var ran []time.Time
	ws := hopper.NewWorkers()
	hopper.Register(ws, "sync", func(ctx context.Context, n int) (any, error) {
		args = append(args, n)
		ran = append(ran, time.Now())
		return nil, nil
	}, nil)
	return silentClient(t, hopper.Config{Workers: ws}), &args, &ran
}

// TestDebounceThousandEnqueuesOneRun: 1,000 enqueues of one key within the
// period give exactly one run, with the last args (issue 21's acceptance).
func TestDebounceThousandEnqueuesOneRun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, args, _ := debounceClient(t)
		ctx := context.Background()
		opts := &hopper.EnqueueOptions{UniqueKey: "user:7", Debounce: hopper.Debounce{Period: 2 * time.Second}}
		var first hopper.ID
		for i := range 1000 {
			res, err := c.Enqueue(ctx, "sync", i, opts)
			if err != nil {
				t.Fatalf("Enqueue %d: %v", i, err)
			}
			if i == 0 {
				first = res.ID
			} else if !res.Debounced || res.Duplicate || res.ID != first {
				t.Fatalf("Enqueue %d: got ID %d Debounced %v Duplicate %v, want job %d debounced", i, res.ID, res.Debounced, res.Duplicate, first)
			}
			time.Sleep(time.Millisecond) // the fake clock: 1 s of enqueues in all
			if ran, err := c.RunReady(ctx, time.Now()); err != nil || len(ran) != 0 {
				t.Fatalf("RunReady after enqueue %d: ran %d, %v; want none within the period", i, len(ran), err)
			}
		}
		ran, err := c.RunReady(ctx, time.Now().Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if len(ran) != 1 || len(*args) != 1 || (*args)[0] != 999 {
			t.Fatalf("runs: got %d jobs with args %v, want 1 run with args 999", len(ran), *args)
		}
		n, err := c.Count(ctx, hopper.ListOptions{})
		if err != nil || n != 1 {
			t.Errorf("jobs stored: got %d, %v; want 1", n, err)
		}
	})
}

// TestDebounceMaxWaitHonoured: enqueues every 500 ms with a period of 1 s
// would push the run forever; a max wait of 3 s runs the job 3 s after its
// first enqueue, with the args of that moment, and the next enqueue starts
// a new job.
func TestDebounceMaxWaitHonoured(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, args, ran := debounceClient(t)
		ctx := context.Background()
		opts := &hopper.EnqueueOptions{UniqueKey: "k", Debounce: hopper.Debounce{Period: time.Second, MaxWait: 3 * time.Second}}
		start := time.Now()
		for i := range 20 { // 0 s to 9.5 s
			if _, err := c.Enqueue(ctx, "sync", i, opts); err != nil {
				t.Fatalf("Enqueue %d: %v", i, err)
			}
			time.Sleep(500 * time.Millisecond)
			if _, err := c.RunReady(ctx, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		// Enqueue i comes at i×500 ms. The first job runs at 3 s, its max
		// wait, with the args of enqueue 5; enqueue 6 (at 3 s, after that
		// run) makes the next job, which runs at 6 s with those of enqueue
		// 11, and so on. The last job, made at 9 s, is due at 10.5 s.
		wantAt := []time.Duration{3 * time.Second, 6 * time.Second, 9 * time.Second}
		wantArgs := []int{5, 11, 17}
		if len(*ran) != len(wantAt) {
			t.Fatalf("runs: got %d at %v, want %d", len(*ran), *ran, len(wantAt))
		}
		for i, at := range *ran {
			if at.Sub(start) != wantAt[i] || (*args)[i] != wantArgs[i] {
				t.Errorf("run %d: at %v with args %d, want at %v with args %d", i, at.Sub(start), (*args)[i], wantAt[i], wantArgs[i])
			}
		}
		if got, err := c.RunReady(ctx, start.Add(10500*time.Millisecond)); err != nil || len(got) != 1 || (*args)[3] != 19 {
			t.Errorf("RunReady at 10.5 s: ran %d, %v, args %v; want the last job with args 19", len(got), err, *args)
		}
	})
}

// TestDebounceOptionsRefused: a debounce needs a unique key and no run-at,
// and is per job.
func TestDebounceOptionsRefused(t *testing.T) {
	t.Parallel()
	c, _, _ := debounceClient(t)
	ctx := context.Background()
	d := hopper.Debounce{Period: time.Second}
	for _, tc := range []struct {
		opts  hopper.EnqueueOptions
		field string
	}{
		{hopper.EnqueueOptions{Debounce: d}, "debounce"},
		{hopper.EnqueueOptions{UniqueKey: "k", Debounce: d, Delay: time.Second}, "debounce"},
		{hopper.EnqueueOptions{UniqueKey: "k", Debounce: hopper.Debounce{Period: -time.Second}}, "debounce.period"},
		{hopper.EnqueueOptions{UniqueKey: "k", Debounce: hopper.Debounce{Period: time.Minute, MaxWait: time.Second}}, "debounce.max_wait"},
	} {
		_, err := c.Enqueue(ctx, "sync", 1, &tc.opts)
		var fe *hopper.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Enqueue(%+v): got %v, want a *FieldError on %s", tc.opts, err, tc.field)
		}
	}
	if n, err := c.Count(ctx, hopper.ListOptions{}); err != nil || n != 0 {
		t.Errorf("jobs stored: got %d, %v; want 0", n, err)
	}
	if _, err := hopper.NewClient(hopper.Config{Defaults: hopper.EnqueueOptions{Debounce: d}}); err == nil {
		t.Errorf("NewClient with a debounce in Config.Defaults: got no error")
	}
}
