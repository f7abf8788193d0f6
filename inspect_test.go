package hopper_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/pgtest"
)

// TestStatsCachedAndDelete: StatsCached shares one count within maxAge;
// Delete deletes finished jobs only and never "all"; Ping answers.
func TestStatsCachedAndDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := hopper.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "h.db"), hopper.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	a := enqueue(t, c, "k", nil, nil)
	first, err := c.StatsCached(ctx, time.Minute, time.Hour)
	if err != nil || first.Queues["default"][hopper.StateAvailable] != 1 {
		t.Fatalf("StatsCached: %+v, %v", first, err)
	}
	enqueue(t, c, "k", nil, nil)
	if again, _ := c.StatsCached(ctx, time.Minute, time.Hour); again.Queues["default"][hopper.StateAvailable] != 1 {
		t.Errorf("within maxAge: %v, want the cached count 1", again.Queues)
	}
	if fresh, _ := c.StatsCached(ctx, time.Minute, 0); fresh.Queues["default"][hopper.StateAvailable] != 2 {
		t.Errorf("maxAge 0: %v, want a fresh count 2", fresh.Queues)
	}
	if n, err := c.Delete(ctx, a); n != 0 || err != nil {
		t.Errorf("Delete of a waiting job: %d, %v; want 0 (cancel first)", n, err)
	}
	c.Cancel(ctx, a)
	if n, err := c.Delete(ctx, a); n != 1 || err != nil {
		t.Errorf("Delete of a cancelled job: %d, %v; want 1", n, err)
	}
	var fe *hopper.FieldError
	if _, err := c.Delete(ctx); !errors.As(err, &fe) {
		t.Errorf("Delete(): %v, want a FieldError", err)
	}
	if _, err := c.Get(ctx, a); !errors.Is(err, hopper.ErrNotFound) {
		t.Errorf("Get after Delete: %v", err)
	}
}

// TestListRefusesNamesNoJobHas: a queue or kind filter no job can have (a
// NUL, bytes that are not UTF-8, a control character, blank, too long) is
// refused by List and Count with a *FieldError naming it, on every store:
// PostgreSQL would otherwise fail on the NUL and the bad bytes (a 500 in
// the API and the dashboard) where the other stores find nothing.
func TestListRefusesNamesNoJobHas(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"memory", "sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var c *hopper.Client
			var err error
			switch name {
			case "memory":
				c, err = hopper.NewClient(hopper.Config{Logger: quiet})
			case "sqlite":
				c, err = hopper.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "h.db"), hopper.Config{Logger: quiet})
			case "postgres":
				c, err = hopper.Open(ctx, pgtest.StoreURL(t, 2), hopper.Config{Logger: quiet})
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.StopNow()
			enqueue(t, c, "k", nil, nil)
			for _, bad := range []string{"a\x00b", "a\xffb", "\xc3", "tab\there", " ", strings.Repeat("q", 256)} {
				for field, o := range map[string]hopper.ListOptions{
					"queue": {Queue: bad},
					"kind":  {Kind: bad},
				} {
					var fe *hopper.FieldError
					if _, err := c.List(ctx, o); !errors.As(err, &fe) || fe.Field != field {
						t.Errorf("List with %s %q: %v, want a FieldError on %s", field, bad, err, field)
					}
					if _, err := c.Count(ctx, o); !errors.As(err, &fe) || fe.Field != field {
						t.Errorf("Count with %s %q: %v, want a FieldError on %s", field, bad, err, field)
					}
				}
			}
			// A name a job can have still filters.
			if n, err := c.Count(ctx, hopper.ListOptions{Queue: "default", Kind: "k"}); n != 1 || err != nil {
				t.Errorf("Count of queue default, kind k: %d, %v; want 1", n, err)
			}
		})
	}
}
