package pgstore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/hopperq/hopper/store/storetest"
)

// keyClock is a keyless hints' clock that moves only when told.
type keyClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *keyClock) get() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *keyClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// hotKeyQueue makes queue "q" of s keyed (one job per key at a time) with
// n jobs of key "hot" and one of key "cold", and sets s's hints' clock to
// one that moves only when told.
func hotKeyQueue(t *testing.T, s *pgstore.Store, n int) *keyClock {
	t.Helper()
	one := 1
	if _, err := s.SetQueue(t.Context(), store.SetQueueParams{Now: t0, Name: "q", KeyConcurrency: &one}); err != nil {
		t.Fatal(err)
	}
	jobs := make([]*job.Job, 0, n+1)
	for i := range n + 1 {
		j := keyedJob(t, "hot")
		if i == n {
			j = keyedJob(t, "cold")
		}
		jobs = append(jobs, j)
	}
	enqueue(t, s, jobs...)
	c := &keyClock{now: t0}
	pgstore.SetKeylessClock(s, c.get)
	return c
}

// keyedJob returns a job of queue "q" with key (none if "").
func keyedJob(t *testing.T, key string) *job.Job { return storetest.KeyedJob(t, "q", key) }

// claimQ claims up to 5 jobs of queue "q" through s and returns their keys.
func claimQ(t *testing.T, s *pgstore.Store) []string { return storetest.ClaimKeys(t, s, "q") }

// TestKeylessReadOnce: the claims of a keyed queue whose walk wraps
// around (a hot key at its limit, its backlog waiting) and which holds no
// job without a key read its keyless jobs once, not at every claim
// (decision 105); a keyless job this Store enqueues is claimed at the
// next claim.
func TestKeylessReadOnce(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{PgBouncer: true}) // no listener: only this Store's writes clear the hint
	hotKeyQueue(t, s, 100)
	if got := claimQ(t, s); len(got) != 2 {
		t.Fatalf("first claim: keys %q, want hot and cold", got)
	}
	for range 10 {
		if got := claimQ(t, s); len(got) != 0 {
			t.Fatalf("claim with hot at its limit: keys %q, want none", got)
		}
	}
	if n := pgstore.KeylessReads(s); n != 1 {
		t.Errorf("keyless reads over 11 claims: %d, want 1", n)
	}
	enqueue(t, s, keyedJob(t, ""))
	if got := claimQ(t, s); len(got) != 1 || got[0] != "" {
		t.Errorf("claim after a keyless enqueue by the same Store: keys %q, want the keyless job", got)
	}
}

// hintedPair returns Stores a and b of one schema, a's keyless hint of
// queue "q" set (hotKeyQueue, hot at its limit, a claim that found none),
// and a function that enqueues jobs through b and returns once a's
// listener heard of them.
func hintedPair(t *testing.T) (a *pgstore.Store, enqueueHeard func(jobs ...*job.Job)) {
	t.Helper()
	schema := freshSchema(t)
	a = quiet(t, schema)
	hotKeyQueue(t, a, 100)
	b := openIn(t, schema, pgstore.Options{})
	claimQ(t, a)
	claimQ(t, a)
	if got := claimQ(t, a); len(got) != 0 {
		t.Fatalf("claim with hot at its limit: keys %q, want none", got)
	}
	heard := make(chan struct{}, 1)
	pgstore.OnHeard(a, func() {
		select {
		case heard <- struct{}{}:
		default:
		}
	})
	return a, func(jobs ...*job.Job) {
		t.Helper()
		before := pgstore.Heard(a)
		enqueue(t, b, jobs...)
		for pgstore.Heard(a) == before {
			select {
			case <-heard:
			case <-time.After(deadline):
				t.Fatal("the notification of b's enqueue did not arrive")
			}
		}
	}
}

// TestKeylessNotified: a keyless job another Store enqueues is claimed at
// the first claim after this Store's listener heard of it.
func TestKeylessNotified(t *testing.T) {
	t.Parallel()
	a, enqueueHeard := hintedPair(t)
	enqueueHeard(keyedJob(t, ""))
	if got := claimQ(t, a); len(got) != 1 || got[0] != "" {
		t.Errorf("claim after the notification: keys %q, want the keyless job", got)
	}
}

// TestKeylessKeyedNotification: another Store's enqueue of jobs that all
// have a key leaves this Store's keyless hint: its next claims read no
// keyless job (decision 107; before, every notification naming the queue
// cleared it, and each keyed enqueue elsewhere cost a read of the hot
// key's backlog). A keyless job enqueued after it is claimed at the first
// claim after its notification.
func TestKeylessKeyedNotification(t *testing.T) {
	t.Parallel()
	a, enqueueHeard := hintedPair(t)
	reads := pgstore.KeylessReads(a)
	enqueueHeard(keyedJob(t, "hot"), keyedJob(t, "hot"))
	if got := claimQ(t, a); len(got) != 0 {
		t.Fatalf("claim after b's keyed enqueue: keys %q, want none (hot at its limit)", got)
	}
	if n := pgstore.KeylessReads(a) - reads; n != 0 {
		t.Errorf("after b enqueued jobs that all have a key, a claim read the keyless jobs %d times, want 0", n)
	}
	enqueueHeard(keyedJob(t, "hot"), keyedJob(t, ""))
	if got := claimQ(t, a); len(got) != 1 || got[0] != "" {
		t.Errorf("claim after b's enqueue of a keyless job: keys %q, want the keyless job", got)
	}
}

// TestKeylessHintExpires: without a listener, a keyless job another Store
// enqueues waits for the hint to expire (keylessRecheckMin at least), and
// is claimed at the first claim after.
func TestKeylessHintExpires(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	a := openIn(t, schema, pgstore.Options{PgBouncer: true})
	c := hotKeyQueue(t, a, 100)
	b := openIn(t, schema, pgstore.Options{PgBouncer: true})
	claimQ(t, a)
	claimQ(t, a)
	enqueue(t, b, keyedJob(t, ""))
	if got := claimQ(t, a); len(got) != 0 {
		t.Fatalf("claim while the hint holds: keys %q, want none", got)
	}
	c.add(pgstore.KeylessRecheckMin)
	if got := claimQ(t, a); len(got) != 1 || got[0] != "" {
		t.Errorf("claim once the hint expired: keys %q, want the keyless job", got)
	}
}
