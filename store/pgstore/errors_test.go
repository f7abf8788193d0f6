package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/jackc/pgx/v5"
)

// TestOpenFailsFast: a server that cannot be reached, or that refuses the
// connection for want of a slot, fails Open at once with an error saying
// so (and, for the slots, which limit to raise).
func TestOpenFailsFast(t *testing.T) {
	t.Parallel()
	base, err := url.Parse(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	nowhere := *base
	nowhere.Host = "127.0.0.1:1" // nothing listens on port 1
	start := time.Now()
	s, err := pgstore.Open(t.Context(), nowhere.String(), pgstore.Options{Schema: "x"})
	if !errors.Is(err, pgstore.ErrUnavailable) {
		if s != nil {
			s.Close()
		}
		t.Errorf("Open of a closed port: got %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Open of a closed port took %v", d)
	}

	var b [4]byte
	rand.Read(b[:])
	role := "hopper_test_role_" + hex.EncodeToString(b[:])
	c := conn(t)
	if _, err := c.Exec(t.Context(), `CREATE ROLE `+role+` LOGIN CONNECTION LIMIT 0`); err != nil {
		t.Skipf("cannot create a role to test connection limits: %v", err)
	}
	t.Cleanup(func() { conn(t).Exec(context.Background(), `DROP ROLE IF EXISTS `+role) })
	limited := *base
	limited.User = url.User(role)
	s, err = pgstore.Open(t.Context(), limited.String(), pgstore.Options{Schema: "x"})
	if !errors.Is(err, pgstore.ErrTooManyConnections) || !strings.Contains(err.Error(), "CONNECTION LIMIT") {
		if s != nil {
			s.Close()
		}
		t.Errorf("Open as a role without a connection slot: got %v, want ErrTooManyConnections naming the role's CONNECTION LIMIT", err)
	}
}

// TestErrorsAreDomainErrors: what callers match on is a job error, and
// operations after Close fail with job.ErrClosed.
func TestErrorsAreDomainErrors(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	ctx := t.Context()
	// A (schedule, fire time) that exists: job.ErrDuplicate, nothing inserted.
	j := newJob(t, "k")
	j.Schedule, j.FireTime = "s", t0
	enqueue(t, s, j)
	other := newJob(t, "k")
	if _, err := s.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{other, j}}); !errors.Is(err, job.ErrDuplicate) {
		t.Errorf("Enqueue of a fired tick again: got %v, want job.ErrDuplicate", err)
	}
	if n, _ := s.Count(ctx, store.ListParams{}); n != 1 {
		t.Errorf("after the refused Enqueue: %d jobs, want 1", n)
	}
	// A server error says where it comes from once, however many layers
	// it went through (a NUL, which PostgreSQL cannot store in text).
	nul := newJob(t, "k")
	nul.Queue = "a\x00"
	for name, op := range map[string]func() error{
		"List":  func() error { _, err := s.List(ctx, store.ListParams{Kind: "a\x00"}); return err },
		"Count": func() error { _, err := s.Count(ctx, store.ListParams{Queue: "a\x00"}); return err },
		"Enqueue": func() error {
			_, err := s.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{nul}})
			return err
		},
		"GetSchedule": func() error { _, err := s.GetSchedule(ctx, "a\x00"); return err },
	} {
		if err := op(); err == nil || strings.Count(err.Error(), "pgstore:") != 1 {
			t.Errorf("%s with a NUL: got %v, want one error from the server, prefixed once", name, err)
		}
	}
	if _, err := s.Cancel(ctx, store.CancelParams{Now: t0, ID: 12345}); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("Cancel of an unknown job: got %v, want job.ErrNotFound", err)
	}
	// A database without the schema (dropped behind the store's back).
	if _, err := conn(t).Exec(ctx, `DROP SCHEMA `+pgx.Identifier{s.Schema()}.Sanitize()+` CASCADE`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, 1); !errors.Is(err, pgstore.ErrNoSchema) {
		t.Errorf("Get after the schema was dropped: got %v, want ErrNoSchema", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, pgstore.ErrNoSchema) {
		t.Errorf("Ping after the schema was dropped: got %v, want ErrNoSchema", err)
	}
	s.Close()
	if _, err := s.Stats(ctx, store.StatsParams{}); !errors.Is(err, job.ErrClosed) {
		t.Errorf("Stats after Close: got %v, want job.ErrClosed", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, job.ErrClosed) {
		t.Errorf("Ping after Close: got %v, want job.ErrClosed", err)
	}
}
