package hopper_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// remoteFetch fetches up to max jobs at once as worker w.
func remoteFetch(t *testing.T, c *hopper.Client, w string, max int) []hopper.Lease {
	t.Helper()
	f, err := c.FetchJobs(context.Background(), hopper.FetchParams{Worker: w, Max: max})
	if err != nil {
		t.Fatal(err)
	}
	return f.Leases
}

func registerRemote(t *testing.T, c *hopper.Client) string {
	t.Helper()
	w, err := c.RegisterWorker(context.Background(), hopper.WorkerSpec{Kinds: []string{"mail"}, Slots: 8, Name: "py"}, "")
	if err != nil {
		t.Fatal(err)
	}
	return w.ID
}

func getJob(t *testing.T, c *hopper.Client, id hopper.ID) *hopper.Job {
	t.Helper()
	j, err := c.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestRemoteSnoozeHoldsKey: a remote worker's snooze puts its job back for
// the delay without counting the attempt; with HoldKey no other job of the
// key starts before the delay ends, while another key's does. The token of
// the snoozed lease is then stale.
func TestRemoteSnoozeHoldsKey(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := newClient(t, hopper.Config{})
		w := registerRemote(t, c)
		first := enqueue(t, c, "mail", nil, &hopper.EnqueueOptions{Key: "tenant=1", MaxAttempts: 1})
		ls := remoteFetch(t, c, w, 1)
		start := time.Now()
		snooze := []hopper.RemoteSnooze{{Token: ls[0].Token, Delay: time.Minute, HoldKey: true, Reason: "429 Too Many Requests"}}
		fin, err := c.SnoozeJobs(ctx, w, "", snooze)
		if err != nil || len(fin) != 1 || fin[0].State != hopper.StateScheduled {
			t.Fatalf("SnoozeJobs: %+v, %v; want scheduled", fin, err)
		}
		j := getJob(t, c, first)
		a := j.Attempts[len(j.Attempts)-1]
		if j.Attempt != 0 || !j.RunAt.Equal(start.Add(time.Minute)) || j.LastError != "" ||
			a.Outcome != job.OutcomeSnoozed || a.Error != "key held for 1m0s: 429 Too Many Requests" || a.Worker != w {
			t.Fatalf("snoozed job: attempt %d, run-at +%v, last error %q, record %+v", j.Attempt, j.RunAt.Sub(start), j.LastError, a)
		}
		if _, err := c.SnoozeJobs(ctx, w, "", snooze); !errors.Is(err, hopper.ErrLeaseLost) {
			t.Fatalf("the snooze again: %v, want ErrLeaseLost", err)
		}
		held := enqueue(t, c, "mail", nil, &hopper.EnqueueOptions{Key: "tenant=1"})
		other := enqueue(t, c, "mail", nil, &hopper.EnqueueOptions{Key: "tenant=2"})
		ls = remoteFetch(t, c, w, 8)
		if len(ls) != 1 || ls[0].Job.ID != other {
			t.Fatalf("fetched %+v while tenant=1 is held, want only job %d", ls, other)
		}
		if _, err := c.CompleteJobs(ctx, w, "", []hopper.Completion{{Token: ls[0].Token}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		var got []hopper.ID
		for _, l := range remoteFetch(t, c, w, 8) {
			got = append(got, l.Job.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, []hopper.ID{first, held}) {
			t.Fatalf("after the hold: fetched %v, want %d and %d", got, first, held)
		}
	})
}

// TestRemoteSnoozesBounded: past Config.MaxSnoozes snoozes in a row, a
// remote snooze counts as a failed attempt, as a Go handler's does.
func TestRemoteSnoozesBounded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := newClient(t, hopper.Config{MaxSnoozes: 1})
		w := registerRemote(t, c)
		id := enqueue(t, c, "mail", nil, &hopper.EnqueueOptions{MaxAttempts: 1})
		for i, want := range []hopper.State{hopper.StateScheduled, hopper.StateDead} {
			ls := remoteFetch(t, c, w, 1)
			if len(ls) != 1 {
				t.Fatalf("snooze %d: nothing to fetch", i)
			}
			fin, err := c.SnoozeJobs(ctx, w, "", []hopper.RemoteSnooze{{Token: ls[0].Token}})
			if err != nil || fin[0].State != want {
				t.Fatalf("snooze %d: %+v, %v; want %s", i, fin, err, want)
			}
		}
		if j := getJob(t, c, id); !strings.Contains(j.LastError, "snoozed 1 times in a row") {
			t.Fatalf("last error %q", j.LastError)
		}
	})
}

// TestRemoteLeaseTimeout: a remote job's timeout applies on the server: a
// worker that keeps heartbeating past it loses the lease at its next
// heartbeat (lost), the attempt fails as a Go handler's timeout does, and
// the late completion is refused and reported to OnRefused.
func TestRemoteLeaseTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var mu sync.Mutex
		var refused []hopper.ID
		c := newClient(t, hopper.Config{Remote: hopper.RemoteOptions{OnRefused: func(_ string, jobs []hopper.ID) {
			mu.Lock()
			defer mu.Unlock()
			refused = append(refused, jobs...)
		}}})
		w := registerRemote(t, c)
		retry := backoff.Fixed(time.Minute)
		id := enqueue(t, c, "mail", nil, &hopper.EnqueueOptions{Timeout: 5 * time.Second, MaxAttempts: 2, Retry: &retry})
		untimed := enqueue(t, c, "mail", nil, nil)
		ls := remoteFetch(t, c, w, 2)
		if len(ls) != 2 || ls[0].Job.ID != id {
			t.Fatalf("fetched %+v", ls)
		}
		tokens := []string{ls[0].Token, ls[1].Token}
		time.Sleep(4 * time.Second)
		if hb, err := c.HeartbeatWorker(ctx, w, "", tokens); err != nil || len(hb.Lost) != 0 {
			t.Fatalf("heartbeat before the timeout: %+v, %v", hb, err)
		}
		time.Sleep(2 * time.Second)
		hb, err := c.HeartbeatWorker(ctx, w, "", tokens)
		if err != nil || !slices.Equal(hb.Lost, tokens[:1]) || len(hb.Cancel) != 0 {
			t.Fatalf("heartbeat after the timeout: %+v, %v; want the first token lost", hb, err)
		}
		j := getJob(t, c, id)
		if j.State != hopper.StateRetrying || !strings.Contains(j.LastError, "timed out after 5s") || j.Attempts[0].Worker != w {
			t.Fatalf("timed-out job: %s, %q, %+v", j.State, j.LastError, j.Attempts)
		}
		if getJob(t, c, untimed).State != hopper.StateRunning {
			t.Fatal("the job without a timeout was ended")
		}
		if _, err := c.CompleteJobs(ctx, w, "", []hopper.Completion{{Token: tokens[0]}}); !errors.Is(err, hopper.ErrLeaseLost) {
			t.Fatalf("late completion: %v, want ErrLeaseLost", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(refused, []hopper.ID{id}) {
			t.Fatalf("OnRefused saw %v, want [%d]", refused, id)
		}
	})
}

// goneAfterFinish is a store whose Finish commits and then reports the
// caller's context error once the caller has gone, as a PostgreSQL batch
// read after its commit can: a remote worker killed while its complete
// was being written.
type goneAfterFinish struct {
	store.Store
	gone atomic.Pointer[context.CancelFunc]
}

func (s *goneAfterFinish) Finish(ctx context.Context, p store.FinishParams) ([]job.State, error) {
	r, err := s.Store.Finish(ctx, p)
	if cancel := s.gone.Load(); err == nil && cancel != nil {
		(*cancel)()
		return r, ctx.Err()
	}
	return r, err
}

// TestRemoteOutcomeRecordedWhenTheWorkerGoes: an outcome the store
// committed is reported — its transition logged and observed — even if
// the remote worker's request is cancelled while it is written (its
// connection closed by a kill -9). Found by
// TestPostgresWorkerFencingUnderFaults: a job completed in the store with
// no completion event.
func TestRemoteOutcomeRecordedWhenTheWorkerGoes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &goneAfterFinish{Store: memstore.New()}
		events := make(chan hopper.Event, 16)
		c := newClient(t, hopper.Config{Store: st, OnEvent: func(ev hopper.Event) {
			if ev.Type == job.EventCompleted {
				events <- ev
			}
		}})
		w := registerRemote(t, c)
		id := enqueue(t, c, "mail", nil, nil)
		ls := remoteFetch(t, c, w, 1)
		ctx, cancel := context.WithCancel(context.Background())
		st.gone.Store(&cancel)
		fin, err := c.CompleteJobs(ctx, w, "", []hopper.Completion{{Token: ls[0].Token}})
		if err != nil || len(fin) != 1 || fin[0].State != hopper.StateCompleted {
			t.Fatalf("CompleteJobs with the request gone: %+v, %v; want it completed", fin, err)
		}
		synctest.Wait()
		select {
		case ev := <-events:
			if ev.Job.ID != id {
				t.Fatalf("completed event of job %d, want %d", ev.Job.ID, id)
			}
		default:
			t.Fatal("no completed event for a completion the store committed")
		}
		if j := getJob(t, c, id); j.State != hopper.StateCompleted {
			t.Fatalf("job %s, want completed", j.State)
		}
	})
}
