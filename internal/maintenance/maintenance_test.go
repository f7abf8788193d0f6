package maintenance

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func addSchedule(t *testing.T, st store.Store, sc *job.Schedule) {
	t.Helper()
	sc.CreatedAt = t0
	next, err := FirstRun(sc, t0)
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
		st.Finish(ctx, store.FinishParams{Now: now, Outcomes: []store.Outcome{{ID: j.ID, Attempt: j.Attempt, State: job.StateCompleted}}})
	}
	return res.Jobs
}

func TestFireDueFixedDelayCountsFromCompletion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New()
	s := New(Config{Store: st})
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
	s := New(Config{Store: st})
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
	s := New(Config{Store: st, CompletedRetention: time.Hour, DeadRetention: -1, DeadMaxCount: 2})
	for range 5 {
		j := &job.Job{Kind: "k", MaxAttempts: 1}
		j.Validate(t0, 1)
		st.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}})
	}
	res, _ := st.Claim(ctx, store.ClaimParams{Now: t0, Limit: 5, Worker: "w", LeaseUntil: t0.Add(time.Hour)})
	jobs := res.Jobs
	for i, j := range jobs {
		state := job.StateDead
		if i == 0 {
			state = job.StateCompleted
		}
		st.Finish(ctx, store.FinishParams{Now: t0.Add(time.Duration(i) * time.Minute), Outcomes: []store.Outcome{{ID: j.ID, Attempt: 1, State: state}}})
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
		s := New(Config{Store: st, OnFire: func(id job.ID) { fired <- id }})
		sc := &job.Schedule{Name: "e", Spec: "@every 1m", Kind: "k", Overlap: job.OverlapAllow, CreatedAt: time.Now()}
		sc.NextRunAt, _ = FirstRun(sc, time.Now())
		st.AddSchedule(context.Background(), store.AddScheduleParams{Schedule: sc})
		s.Start()
		s.Start()
		time.Sleep(3*time.Minute + time.Second)
		s.Stop()
		s.Stop()
		if len(fired) != 3 {
			t.Errorf("fired %d times in 3 minutes, want 3", len(fired))
		}
	})
}
