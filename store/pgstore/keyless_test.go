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

// TestKeylessNotified: a keyless job another Store enqueues is claimed at
// the first claim after this Store's listener heard of it.
func TestKeylessNotified(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	a := quiet(t, schema)
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
	before := pgstore.Heard(a)
	enqueue(t, b, keyedJob(t, ""))
	for pgstore.Heard(a) == before {
		select {
		case <-heard:
		case <-time.After(deadline):
			t.Fatal("the notification of b's enqueue did not arrive")
		}
	}
	if got := claimQ(t, a); len(got) != 1 || got[0] != "" {
		t.Errorf("claim after the notification: keys %q, want the keyless job", got)
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
