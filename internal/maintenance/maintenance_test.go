package maintenance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper/internal/logtest"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testConfig is a complete Config on st, as a client would make it: fired
// jobs get the default queue and 25 attempts.
func testConfig(st store.Store) Config {
	return Config{
		Store: st, Logger: slog.New(slog.DiscardHandler), Now: time.Now,
		MakeJob: func(sc *job.Schedule, fireTime time.Time, _ time.Duration, now time.Time) (*job.Job, error) {
			j := sc.NewJob(fireTime)
			j.Queue = cmp.Or(j.Queue, job.DefaultQueue)
			j.MaxAttempts = cmp.Or(j.MaxAttempts, 25)
			return j, j.Validate(now)
		},
		RescueInterval: 10 * time.Second, CleanInterval: time.Minute, SchedulePoll: time.Second, MonitorPoll: 5 * time.Second,
		CompletedRetention: 24 * time.Hour, CancelledRetention: 24 * time.Hour, DeadRetention: 7 * 24 * time.Hour,
		DeadMaxCount: 10000,
	}
}

func addSchedule(t *testing.T, st store.Store, sc *job.Schedule) {
	t.Helper()
	sc.CreatedAt = t0
	next, err := sc.FirstRun(t0)
	if err != nil {
		t.Fatal(err)
	}
	sc.NextRunAt = next
	if err := st.AddSchedule(context.Background(), store.AddScheduleParams{Schedule: sc}); err != nil {
		t.Fatal(err)
	}
}

// runAll claims and completes every due job at now.
func runAll(t *testing.T, st store.Store, now time.Time) []*job.Job {
	t.Helper()
	ctx := context.Background()
	res, err := st.Claim(ctx, store.ClaimParams{Now: now, Limit: 100, Worker: "w", LeaseUntil: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range res.Jobs {
		st.Finish(ctx, store.FinishParams{Now: now, Outcomes: []store.Outcome{{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted}}})
	}
	return res.Jobs
}

func TestFireDueFixedDelayCountsFromCompletion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New()
	s := New(testConfig(st))
	addSchedule(t, st, &job.Schedule{Name: "d", Spec: "10s", FixedDelay: true, Kind: "k"})
	if next := s.FireDue(ctx, t0.Add(9*time.Second)); !next.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("next tick %v, want t0+10s", next)
	}
	s.FireDue(ctx, t0.Add(10*time.Second)) // fires; next unknown until it finishes
	if next := s.FireDue(ctx, t0.Add(30*time.Second)); !next.IsZero() {
		t.Fatalf("while the job waits: next %v, want none", next)
	}
	runAll(t, st, t0.Add(33*time.Second)) // finished at +33s
	if next := s.FireDue(ctx, t0.Add(34*time.Second)); !next.Equal(t0.Add(43 * time.Second)) {
		t.Fatalf("after completion: next %v, want finish+10s = t0+43s", next)
	}
}

func TestFireDueCronInZone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New()
	s := New(testConfig(st))
	addSchedule(t, st, &job.Schedule{Name: "c", Spec: "0 9 * * *", TimeZone: "America/New_York", Kind: "k"})
	ny, _ := time.LoadLocation("America/New_York")
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, ny)
	if next := s.FireDue(ctx, at.Add(-time.Second)); !next.Equal(at) {
		t.Fatalf("next %v, want %v", next, at)
	}
	s.FireDue(ctx, at)
	jobs := runAll(t, st, at)
	if len(jobs) != 1 || !jobs[0].FireTime.Equal(at) || jobs[0].Schedule != "c" || jobs[0].MaxAttempts != 25 {
		t.Fatalf("fired %+v", jobs)
	}
}

func TestCleanEnforcesRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New()
	cfg := testConfig(st)
	cfg.CompletedRetention, cfg.DeadRetention, cfg.DeadMaxCount = time.Hour, -1, 2
	s := New(cfg)
	for range 5 {
		j := &job.Job{Kind: "k", Queue: "q", MaxAttempts: 1}
		j.Validate(t0)
		st.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}})
	}
	res, _ := st.Claim(ctx, store.ClaimParams{Now: t0, Limit: 5, Worker: "w", LeaseUntil: t0.Add(time.Hour)})
	jobs := res.Jobs
	for i, j := range jobs {
		state := job.StateDead
		if i == 0 {
			state = job.StateCompleted
		}
		st.Finish(ctx, store.FinishParams{Now: t0.Add(time.Duration(i) * time.Minute), Outcomes: []store.Outcome{{ID: j.ID, Attempt: 1, Claim: j.Claims, State: state}}})
	}
	s.Clean(ctx, t0.Add(2*time.Hour))
	left, _ := st.List(ctx, store.ListParams{})
	var ids []job.ID
	for _, j := range left {
		ids = append(ids, j.ID)
	}
	// The completed job (older than 1h) is gone; of the four dead, the two newest stay.
	if len(ids) != 2 || ids[0] != jobs[3].ID || ids[1] != jobs[4].ID {
		t.Errorf("left %v, want the two newest dead jobs %d %d", ids, jobs[3].ID, jobs[4].ID)
	}
}

func TestServicesStartStop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		fired := make(chan job.ID, 10)
		cfg := testConfig(st)
		cfg.OnFire = func(_ *job.Schedule, j *job.Job) { fired <- j.ID }
		s := New(cfg)
		sc := &job.Schedule{Name: "e", Spec: "@every 1m", Kind: "k", Overlap: job.OverlapAllow, CreatedAt: time.Now()}
		sc.NextRunAt, _ = sc.FirstRun(time.Now())
		st.AddSchedule(context.Background(), store.AddScheduleParams{Schedule: sc})
		s.Start()
		s.Start()
		time.Sleep(3*time.Minute + time.Second)
		s.Stop()
		s.Stop()
		if len(fired) != 3 {
			t.Errorf("fired %d times in 3 minutes, want 3", len(fired))
		}
		// Stopped services start again.
		time.Sleep(10 * time.Minute)
		s.Start()
		time.Sleep(time.Second)
		s.Stop()
		if len(fired) != 4 {
			t.Errorf("after a restart: fired %d times, want 4 (one catch-up tick)", len(fired))
		}
	})
}

// hungStore blocks every ListSchedules and Rescue until its context ends,
// as a network store whose server stopped answering would.
type hungStore struct {
	store.Store
	calls chan string
}

func (h hungStore) ListSchedules(ctx context.Context) ([]*job.Schedule, error) {
	h.calls <- "list"
	<-ctx.Done()
	return nil, ctx.Err()
}

func (h hungStore) Rescue(ctx context.Context, p store.RescueParams) ([]*job.Job, error) {
	h.calls <- "rescue"
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestStopCancelsHungStoreCalls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := hungStore{Store: memstore.New(), calls: make(chan string, 2)}
		s := New(testConfig(st))
		s.Start()
		<-st.calls
		<-st.calls
		s.Stop() // returns: the blocked calls are cancelled
	})
}

// TestSkipSupersedesRetryingJob: a tick that comes while the previous job
// waits to retry fires, and the waiting job goes to the dead-letter queue;
// a tick that comes while the job runs is skipped and counted.
func TestSkipSupersedesRetryingJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New()
	var events []job.Event
	cfg := testConfig(st)
	cfg.Observe = func(ev job.Event) { events = append(events, ev) }
	s := New(cfg)
	addSchedule(t, st, &job.Schedule{Name: "x", Spec: "@every 1m", Kind: "k"})
	tick := t0.Add(time.Minute)
	s.FireDue(ctx, tick)
	res, _ := st.Claim(ctx, store.ClaimParams{Now: tick, Limit: 1, Worker: "w", LeaseUntil: tick.Add(time.Hour)})
	first := res.Jobs[0]
	st.Finish(ctx, store.FinishParams{Now: tick, Outcomes: []store.Outcome{{ID: first.ID, Attempt: 1, Claim: first.Claims, State: job.StateRetrying, RunAt: tick.Add(time.Hour), Error: "exit 1"}}})
	s.FireDue(ctx, tick.Add(time.Minute))
	j, _ := st.Get(ctx, first.ID)
	if j.State != job.StateDead || !strings.Contains(j.LastError, "superseded") || !strings.Contains(j.LastError, "exit 1") {
		t.Errorf("superseded job: state %s error %q", j.State, j.LastError)
	}
	sc, _ := st.GetSchedule(ctx, "x")
	if sc.LastJobID == first.ID {
		t.Errorf("the tick did not fire")
	}
	var dead int
	for _, ev := range events {
		if ev.Type == job.EventDead && ev.Job.ID == first.ID {
			dead++
		}
	}
	if dead != 1 {
		t.Errorf("dead events for the superseded job: %d, want 1", dead)
	}
	runAllButLeaveRunning := func() { // the new job runs through the next tick
		st.Claim(ctx, store.ClaimParams{Now: tick.Add(time.Minute), Limit: 1, Worker: "w", LeaseUntil: tick.Add(time.Hour)})
	}
	runAllButLeaveRunning()
	s.FireDue(ctx, tick.Add(2*time.Minute))
	if sc, _ := st.GetSchedule(ctx, "x"); sc.SkippedTicks != 1 {
		t.Errorf("skipped ticks %d, want 1", sc.SkippedTicks)
	}
}

// TestSkipLogSaysWhatThePreviousJobDoes: a tick skipped because the
// previous job has not finished logs whether that job waits for a worker
// or runs, never that a job still queued is running.
func TestSkipLogSaysWhatThePreviousJobDoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New()
	var log logtest.Buffer
	cfg := testConfig(st)
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	s := New(cfg)
	addSchedule(t, st, &job.Schedule{Name: "x", Spec: "@every 1m", Kind: "k"})
	tick := t0.Add(time.Minute)
	s.FireDue(ctx, tick)
	sc, _ := st.GetSchedule(ctx, "x")
	first := sc.LastJobID
	s.FireDue(ctx, tick.Add(time.Minute)) // the first job waits for a worker
	st.Claim(ctx, store.ClaimParams{Now: tick, Limit: 1, Worker: "w", LeaseUntil: tick.Add(time.Hour)})
	s.FireDue(ctx, tick.Add(2*time.Minute)) // now it runs
	prev := fmt.Sprintf("previous_job=%d", first)
	waiting := log.Lines(`msg="schedule tick skipped: the previous job is still waiting for a worker"`, prev, "previous_state=available", "skipped_ticks=1")
	running := log.Lines(`msg="schedule tick skipped: the previous job is still running"`, prev, "previous_state=running", "skipped_ticks=2")
	if len(waiting) != 1 || len(running) != 1 || len(log.Lines("schedule tick skipped")) != 2 {
		t.Errorf("log:\n%s\nwant one skip while the job waits for a worker, saying so, and one while it runs", log.String())
	}
}

// partitioned fails Lead for one holder, as a process cut off from the
// database would see it, and counts Rescue calls by holder.
type partitioned struct {
	*memstore.Store
	cut atomic.Pointer[string]
}

func (p *partitioned) Lead(ctx context.Context, lp store.LeadParams) (store.LeadResult, error) {
	if c := p.cut.Load(); c != nil && *c == lp.Holder {
		return store.LeadResult{}, errors.New("connection refused")
	}
	return p.Store.Lead(ctx, lp)
}

// TestOnlyTheLeaderActs: of two processes sharing a store, one runs the
// leader's services (the cleaner here); when it is cut off, it stops
// before its lease ends and the other takes over within the lease and a
// third of it. Both rescue all along.
func TestOnlyTheLeaderActs(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ttl := 9 * time.Second
		pr := startPair(ttl, func(cfg *Config) { cfg.RescueInterval, cfg.CleanInterval = time.Second, time.Second })
		defer pr.stop()
		svcs, stores, rescues, cleans := &pr.svcs, &pr.stores, &pr.rescues, &pr.cleans
		time.Sleep(10 * time.Second)
		l, f := 0, 1 // leader, follower
		if svcs[1].Leading() {
			l, f = 1, 0
		}
		if cleans[l].Load() == 0 || cleans[f].Load() != 0 || !svcs[l].Leading() || svcs[f].Leading() {
			t.Fatalf("cleans %d (leader) %d (follower), leading %v %v",
				cleans[l].Load(), cleans[f].Load(), svcs[l].Leading(), svcs[f].Leading())
		}
		if rescues[l].Load() == 0 || rescues[f].Load() == 0 {
			t.Fatalf("rescues %d (leader) %d (follower): every process rescues", rescues[l].Load(), rescues[f].Load())
		}
		cut := []string{"a", "b"}[l]
		stores[l].cut.Store(&cut)
		cutAt := time.Now()
		for !svcs[f].Leading() {
			time.Sleep(100 * time.Millisecond)
		}
		if took := time.Since(cutAt); took > ttl+ttl/3+time.Second {
			t.Errorf("the follower took over after %s, want within %s", took, ttl+ttl/3)
		}
		if svcs[l].Leading() {
			t.Error("the cut-off leader still thinks it leads after the take-over")
		}
		before := cleans[l].Load()
		time.Sleep(5 * time.Second)
		if cleans[l].Load() != before || cleans[f].Load() == 0 {
			t.Errorf("after the take-over: the old leader cleaned %d more times, the new one %d times",
				cleans[l].Load()-before, cleans[f].Load())
		}
	})
}

// TestFollowerRescues: the jobs of a leader that died are rescued by a
// process that does not lead, within its rescue interval, long before it
// takes the lead over (a lease of the leader later): a slot the dead one
// held is free again a job's lease and a rescue interval after the kill.
func TestFollowerRescues(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		pr := startPair(time.Minute, func(cfg *Config) { cfg.RescueInterval, cfg.CleanInterval = time.Second, time.Hour })
		defer pr.stop()
		svcs, stores, rescues := &pr.svcs, &pr.stores, &pr.rescues
		cut := "a" // the leader, as if killed: it stops renewing its lease
		stores[0].cut.Store(&cut)
		before := rescues[1].Load()
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		if svcs[1].Leading() {
			t.Fatal("the follower leads a second after the cut: the test needs it not to")
		}
		if n := rescues[1].Load() - before; n != 1 {
			t.Errorf("the follower rescued %d times in its rescue interval, want 1", n)
		}
	})
}

// pair is two processes sharing one store, "a" and "b", each behind a
// partition a test can cut, counting their rescues.
type pair struct {
	svcs    [2]*Services
	stores  [2]*partitioned
	rescues [2]atomic.Int64
	cleans  [2]atomic.Int64 // Purge calls
}

// startPair starts a pair with leader lease ttl, set adjusting their
// configs; "a" starts first and takes the lead. Inside a synctest bubble.
func startPair(ttl time.Duration, set func(*Config)) *pair {
	pr := new(pair)
	shared := memstore.New()
	for i := range pr.svcs {
		st := &partitioned{Store: shared}
		pr.stores[i] = st
		cfg := testConfig(counting{st, &pr.rescues[i], &pr.cleans[i]})
		cfg.Leader, cfg.Holder, cfg.LeaderTTL = st, []string{"a", "b"}[i], ttl
		set(&cfg)
		pr.svcs[i] = New(cfg)
		pr.svcs[i].Start()
		synctest.Wait()
	}
	return pr
}

func (pr *pair) stop() {
	for _, s := range pr.svcs {
		s.Stop()
	}
}

// counting counts a store's Rescue and Purge calls.
type counting struct {
	store.Store
	rescues, purges *atomic.Int64
}

func (c counting) Rescue(ctx context.Context, p store.RescueParams) ([]*job.Job, error) {
	c.rescues.Add(1)
	return c.Store.Rescue(ctx, p)
}

func (c counting) Purge(ctx context.Context, p store.PurgeParams) (int, error) {
	c.purges.Add(1)
	return c.Store.Purge(ctx, p)
}

// TestTakeOverRunsAtOnce: a process that takes the lead over cleans (and
// rescues) at once, not an interval later.
func TestTakeOverRunsAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		pr := startPair(9*time.Second, func(cfg *Config) { cfg.RescueInterval, cfg.CleanInterval = time.Hour, time.Hour })
		defer pr.stop()
		svcs, stores, rescues, cleans := &pr.svcs, &pr.stores, &pr.rescues, &pr.cleans
		if !svcs[0].Leading() || cleans[0].Load() == 0 || cleans[1].Load() != 0 || rescues[1].Load() != 1 {
			t.Fatalf("at start: leading %v %v, cleans %d %d, the follower's rescues %d (want 1, at its start)",
				svcs[0].Leading(), svcs[1].Leading(), cleans[0].Load(), cleans[1].Load(), rescues[1].Load())
		}
		cut := "a"
		stores[0].cut.Store(&cut)
		for !svcs[1].Leading() {
			time.Sleep(100 * time.Millisecond)
		}
		synctest.Wait()
		if cleans[1].Load() == 0 || rescues[1].Load() != 2 {
			t.Fatalf("the new leader cleaned %d times and rescued %d times right after taking over, want cleans and a second rescue (its intervals are an hour)",
				cleans[1].Load(), rescues[1].Load())
		}
	})
}

// TestDeathRescuesAtOnce: when its store reports that another process died
// (store.DeathWatcher), a process rescues at once, not an interval later,
// and whether or not it leads: the leader may be the one that died.
func TestDeathRescuesAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		deaths := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
		i := 0
		pr := startPair(9*time.Second, func(cfg *Config) {
			cfg.RescueInterval, cfg.CleanInterval = time.Hour, time.Hour
			cfg.Deaths = deaths[i]
			i++
		})
		defer pr.stop()
		svcs, rescues := &pr.svcs, &pr.rescues
		if !svcs[0].Leading() || svcs[1].Leading() || rescues[0].Load() != 1 || rescues[1].Load() != 1 {
			t.Fatalf("at start: leading %v %v, rescues %d %d", svcs[0].Leading(), svcs[1].Leading(), rescues[0].Load(), rescues[1].Load())
		}
		for k, who := range []string{"the leader", "a follower"} {
			before := rescues[k].Load()
			select {
			case deaths[k] <- struct{}{}:
			case <-time.After(time.Minute):
				t.Fatalf("%s does not watch its store's deaths", who)
			}
			synctest.Wait()
			if n := rescues[k].Load() - before; n != 1 {
				t.Errorf("%s rescued %d times right after its store reported a death, want 1 (its interval is an hour)", who, n)
			}
		}
		if !svcs[0].Leading() || svcs[1].Leading() {
			t.Errorf("after the elections the deaths asked for: leading %v %v, want the leader unchanged", svcs[0].Leading(), svcs[1].Leading())
		}
	})
}
