package hopper_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hopperq/hopper"
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
