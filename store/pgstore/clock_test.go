package pgstore_test

import (
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/jackc/pgx/v5/pgtype"
)

// skewed returns a local clock off by d.
func skewed(d time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(d) }
}

// serverNow reads the server's clock, between two readings of s.Now.
func serverNow(t *testing.T, s *pgstore.Store) (before, server, after time.Time) {
	t.Helper()
	c := conn(t)
	var srv pgtype.Timestamptz
	if err := c.QueryRow(t.Context(), `SELECT 1`).Scan(new(int)); err != nil { // a warm connection
		t.Fatal(err)
	}
	before = s.Now()
	if err := c.QueryRow(t.Context(), `SELECT clock_timestamp()`).Scan(&srv); err != nil {
		t.Fatal(err)
	}
	after = s.Now()
	return before, srv.Time, after
}

// TestClockSkew: a store on a host whose clock is off by ±5s still stamps
// with the server's time (within 100ms), so it steals no lease early.
func TestClockSkew(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	const tolerance = 100 * time.Millisecond
	slow := openIn(t, schema, pgstore.Options{LocalClock: skewed(-5 * time.Second)})
	fast := openIn(t, schema, pgstore.Options{LocalClock: skewed(5 * time.Second)})
	for name, s := range map[string]*pgstore.Store{"-5s": slow, "+5s": fast} {
		before, srv, after := serverNow(t, s)
		if srv.Before(before.Add(-tolerance)) || srv.After(after.Add(tolerance)) {
			t.Errorf("store with a clock off by %s: Now brackets [%v, %v], server said %v", name, before, after, srv)
		}
		if off := s.ClockOffset(); off.Abs() < 4*time.Second || off.Abs() > 6*time.Second {
			t.Errorf("store with a clock off by %s: ClockOffset %v", name, off)
		}
	}
	// The slow host claims a job with a 3s lease, stamped with its Now.
	id := enqueue(t, slow, newJob(t, "k"))[0]
	now := slow.Now()
	res, err := slow.Claim(t.Context(), store.ClaimParams{Now: now, Limit: 1, Worker: "slow", LeaseUntil: now.Add(3 * time.Second)})
	if err != nil || len(res.Jobs) != 1 || res.Jobs[0].ID != id {
		t.Fatalf("Claim: %v, %v", res, err)
	}
	// By the fast host's own clock the lease has expired; by the server's
	// it has not: the fast host must not rescue it.
	if local := time.Now().Add(5 * time.Second); !local.After(res.Jobs[0].LeaseUntil) {
		t.Fatalf("test setup: the fast host's local clock %v is not past the lease %v", local, res.Jobs[0].LeaseUntil)
	}
	moved, err := fast.Rescue(t.Context(), store.RescueParams{Now: fast.Now()})
	if err != nil || len(moved) != 0 {
		t.Errorf("Rescue by the fast host: moved %d jobs, %v; want none (the lease runs 3s more)", len(moved), err)
	}
	// Nor can it claim the job: it is running.
	res, err = fast.Claim(t.Context(), store.ClaimParams{Now: fast.Now(), Limit: 1, Worker: "fast", LeaseUntil: fast.Now().Add(time.Minute)})
	if err != nil || len(res.Jobs) != 0 {
		t.Errorf("Claim by the fast host: got %d jobs, %v, want none", len(res.Jobs), err)
	}
	if j, err := slow.Get(t.Context(), id); err != nil || j.State != job.StateRunning || j.Worker != "slow" {
		t.Errorf("job after the fast host's attempts: %+v, %v", j, err)
	}
}
