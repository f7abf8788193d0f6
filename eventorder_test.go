package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// TestEventsInOrderPerJob: observers see each job's EventEnqueued before
// its EventStarted, although the dispatcher may claim a job the moment the
// store has it, before the enqueuing call reports it. Many callers enqueue
// one job at a time while busy workers claim each as soon as they free up,
// which is when the two race. The test observes through Config.OnEvent,
// which never drops an event (a subscription drops what its buffer cannot
// hold, which made an earlier form of this test fail falsely); OnEvent
// and subscriptions are fed in the same order, by the same call.
func TestEventsInOrderPerJob(t *testing.T) {
	t.Parallel()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "noop", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
	var (
		mu       sync.Mutex
		enqueued = map[hopper.ID]bool{}
		started  int
		bad      hopper.ID // a job started before it was enqueued
	)
	onEvent := func(ev hopper.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Type {
		case job.EventEnqueued:
			enqueued[ev.Job.ID] = true
		case job.EventStarted:
			started++
			if !enqueued[ev.Job.ID] && bad == 0 {
				bad = ev.Job.ID
			}
		}
	}
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Concurrency: 4, Logger: quiet, OnEvent: onEvent})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	const callers, each = 8, 300
	ids := make(chan hopper.ID, callers*each)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range each {
				res, err := c.Enqueue(context.Background(), "noop", nil, nil)
				if err != nil {
					t.Error(err)
					return
				}
				ids <- res.ID
			}
		})
	}
	wg.Wait()
	close(ids)
	for id := range ids {
		if _, err := c.Wait(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if bad != 0 {
		t.Fatalf("job %d: EventStarted before its EventEnqueued", bad)
	}
	if started != callers*each {
		t.Fatalf("%d EventStarted, want %d", started, callers*each)
	}
}

// TestEventsKeepTheirJob: the pool reuses a job's copy for the next claim
// once its attempt is recorded, so the jobs that events carry must be
// copies of their own. Every EventStarted and EventCompleted, read after
// all 500 jobs ran on 4 workers, still names its job and its args.
func TestEventsKeepTheirJob(t *testing.T) {
	t.Parallel()
	const n = 500
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "echo", func(ctx context.Context, args json.RawMessage) (any, error) {
		if j := hopper.JobFromContext(ctx); string(j.Args) != string(args) {
			return nil, fmt.Errorf("job %d: JobFromContext has args %s, the handler %s", j.ID, j.Args, args)
		}
		return args, nil
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Concurrency: 4, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	sub := c.Subscribe(job.EventStarted, job.EventCompleted)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	reqs := make([]hopper.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = hopper.EnqueueRequest{Kind: "echo", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
	}
	res, err := c.EnqueueMany(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	want := make(map[job.ID]string, n)
	for i, r := range res {
		want[r.ID] = string(reqs[i].Args.(json.RawMessage))
	}
	var evs []hopper.Event
	for completed := 0; completed < n; {
		ev := <-sub.C
		if ev.Type == job.EventCompleted {
			completed++
		}
		evs = append(evs, ev)
	}
	seen := make(map[job.EventType]map[job.ID]bool)
	for _, ev := range evs {
		j := ev.Job
		if seen[ev.Type] == nil {
			seen[ev.Type] = make(map[job.ID]bool)
		}
		if seen[ev.Type][j.ID] {
			t.Errorf("two %s events for job %d", ev.Type, j.ID)
		}
		seen[ev.Type][j.ID] = true
		if string(j.Args) != want[j.ID] {
			t.Errorf("%s event of job %d: args %s, want %s", ev.Type, j.ID, j.Args, want[j.ID])
		}
		if ev.Type == job.EventCompleted && string(j.Result) != want[j.ID] {
			t.Errorf("completed job %d: result %s, want %s", j.ID, j.Result, want[j.ID])
		}
	}
	if len(seen[job.EventStarted]) != n {
		t.Errorf("%d jobs started, want %d", len(seen[job.EventStarted]), n)
	}
}

// gapStore is a store whose calls of the client's own transitions run gap,
// if set, after the wrapped store made the transition and before the
// client reports it: the window in which the engine may make and report
// the job's next transition.
type gapStore struct {
	store.Store
	gap func()
}

func (s *gapStore) after() {
	if s.gap != nil {
		s.gap()
	}
}

func (s *gapStore) Cancel(ctx context.Context, p store.CancelParams) (*job.Job, error) {
	defer s.after()
	return s.Store.Cancel(ctx, p)
}

func (s *gapStore) CancelMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	defer s.after()
	return s.Store.CancelMatching(ctx, p)
}

func (s *gapStore) Reschedule(ctx context.Context, p store.RescheduleParams) (*job.Job, error) {
	defer s.after()
	return s.Store.Reschedule(ctx, p)
}

func (s *gapStore) RetryMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	defer s.after()
	return s.Store.RetryMatching(ctx, p)
}

// eventLog records the event types of each job, in the order OnEvent
// received them.
type eventLog struct {
	mu    sync.Mutex
	types map[job.ID][]string
}

func (l *eventLog) onEvent(ev hopper.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.types == nil {
		l.types = map[job.ID][]string{}
	}
	l.types[ev.Job.ID] = append(l.types[ev.Job.ID], string(ev.Type))
}

func (l *eventLog) of(id job.ID) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.types[id], " ")
}

// TestCancelEventsInOrder: a running job's EventCancelRequested comes
// before the EventCancelled of the attempt it stopped, although the
// attempt may end, and the completer report it, before Cancel (or
// CancelMatching) has reported the request. The store's gap ends the
// attempt right after the cancel is stored and lets every goroutine run
// until it blocks (synctest.Wait), before Cancel reports.
func TestCancelEventsInOrder(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"Cancel", "CancelMatching"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				running, release := make(chan struct{}), make(chan struct{})
				ws := hopper.NewWorkers()
				hopper.RegisterRaw(ws, "block", func(ctx context.Context, _ json.RawMessage) (any, error) {
					close(running)
					<-release // not its context: the attempt ends before Cancel cancels it
					return nil, errors.New("stopped")
				}, nil)
				st := &gapStore{Store: memstore.New()}
				var log eventLog
				c := newClient(t, hopper.Config{Store: st, Workers: ws, Concurrency: 1, OnEvent: log.onEvent})
				id := enqueue(t, c, "block", nil, nil)
				<-running
				st.gap = func() {
					close(release)
					synctest.Wait()
				}
				var err error
				if op == "Cancel" {
					_, err = c.Cancel(ctx, id)
				} else {
					_, err = c.CancelMatching(ctx, hopper.BulkOptions{Kind: "block"})
				}
				st.gap = nil
				if err != nil {
					t.Fatal(err)
				}
				if j := wait(t, c, id); j.State != hopper.StateCancelled {
					t.Fatalf("job %s, want cancelled", j.State)
				}
				synctest.Wait() // its last event delivered
				if got, want := log.of(id), "enqueued started cancel_requested cancelled"; got != want {
					t.Errorf("events %q, want %q", got, want)
				}
			})
		})
	}
}

// TestMadeDueEventsInOrder: a job that Reschedule or RetryMatching makes
// due may be claimed at once, before the call has reported it; its
// EventRescheduled or EventRetried still comes before its EventStarted.
// The store's gap enqueues another job, which wakes the dispatcher, and
// lets every goroutine run until it blocks, before the call reports.
func TestMadeDueEventsInOrder(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"Reschedule", "RetryMatching"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				ws := hopper.NewWorkers()
				var failed atomic.Bool
				hopper.RegisterRaw(ws, "once", func(context.Context, json.RawMessage) (any, error) {
					if failed.CompareAndSwap(false, true) {
						return nil, hopper.Permanent(errors.New("first attempt"))
					}
					return nil, nil
				}, nil)
				hopper.RegisterRaw(ws, "noop", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
				st := &gapStore{Store: memstore.New()}
				var log eventLog
				c := newClient(t, hopper.Config{Store: st, Workers: ws, Concurrency: 2, OnEvent: log.onEvent})
				var id hopper.ID
				want := "enqueued rescheduled started dead"
				if op == "Reschedule" {
					id = enqueue(t, c, "once", nil, &hopper.EnqueueOptions{Delay: time.Hour})
				} else {
					id = enqueue(t, c, "once", nil, nil)
					wait(t, c, id)
					want = "enqueued started dead retried started completed"
				}
				st.gap = func() {
					st.gap = nil
					enqueue(t, c, "noop", nil, nil)
					synctest.Wait()
				}
				var err error
				if op == "Reschedule" {
					_, err = c.Reschedule(ctx, id, time.Now(), nil)
				} else {
					_, err = c.RetryMatching(ctx, hopper.BulkOptions{Kind: "once", States: []hopper.State{hopper.StateDead}})
				}
				if err != nil {
					t.Fatal(err)
				}
				wait(t, c, id)
				synctest.Wait() // its last event delivered
				if got := log.of(id); got != want {
					t.Errorf("events %q, want %q", got, want)
				}
			})
		})
	}
}

// commitGateStore is a store whose enqueues of kind "held" wait, before
// they store anything, until commit is closed: an enqueue in flight, as
// one waiting for a durable store's group commit is.
type commitGateStore struct {
	store.Store
	commit chan struct{}
}

func (s *commitGateStore) Enqueue(ctx context.Context, p store.EnqueueParams) ([]store.EnqueueResult, error) {
	if p.Jobs[0].Kind == "held" {
		<-s.commit
	}
	return s.Store.Enqueue(ctx, p)
}

// TestStartsDoNotWaitForEnqueuesInFlight: a worker starts a job while an
// older enqueue of another job is still in flight, and the job's events
// are held back, not its start: they reach observers, in order, once that
// enqueue has reported. The engine's report of a start used to wait for
// every enqueue in flight before it, which with producers always in flight
// held each claim behind a commit of enqueues, and workers fell to a tenth
// of the enqueue rate (issue 19).
func TestStartsDoNotWaitForEnqueuesInFlight(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		ran := make(chan hopper.ID, 2)
		h := func(ctx context.Context, _ json.RawMessage) (any, error) {
			ran <- hopper.JobFromContext(ctx).ID
			return nil, nil
		}
		hopper.RegisterRaw(ws, "noop", h, nil)
		hopper.RegisterRaw(ws, "held", h, nil)
		st := &commitGateStore{Store: memstore.New(), commit: make(chan struct{})}
		commit := sync.OnceFunc(func() { close(st.commit) })
		defer commit() // also when the test fails
		var log eventLog
		c := newClient(t, hopper.Config{Store: st, Workers: ws, Concurrency: 1, OnEvent: log.onEvent})
		heldID := make(chan hopper.ID, 1)
		go func() { heldID <- enqueue(t, c, "held", nil, nil) }()
		synctest.Wait() // the enqueue of "held" waits for its commit
		id := enqueue(t, c, "noop", nil, nil)
		synctest.Wait()
		select {
		case got := <-ran:
			if got != id {
				t.Fatalf("ran job %d, want %d", got, id)
			}
		default:
			t.Fatal("the job did not start while an older enqueue was in flight")
		}
		if j := wait(t, c, id); j.State != hopper.StateCompleted {
			t.Fatalf("job %s, want completed", j.State)
		}
		if got, want := log.of(id), "enqueued"; got != want {
			t.Errorf("events before the older enqueue reported: %q, want %q", got, want)
		}
		commit()
		other := <-heldID
		wait(t, c, other)
		synctest.Wait() // the last events delivered
		for _, id := range []hopper.ID{id, other} {
			if got, want := log.of(id), "enqueued started completed"; got != want {
				t.Errorf("job %d: events %q, want %q", id, got, want)
			}
		}
	})
}
