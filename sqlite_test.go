package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
	_ "github.com/hopperq/hopper/store/sqlitestore" // registers "sqlite:"
)

// TestOpenSQLiteSurvivesRestart runs a job through the durable default,
// opened by URL, closes it, reopens the file and finds the job, its result
// and the schedule again; closures are refused.
func TestOpenSQLiteSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hopper.db")
	ws := hopper.NewWorkers()
	hopper.Register(ws, "double", func(ctx context.Context, n int) (any, error) { return 2 * n, nil }, nil)
	c, err := hopper.Open(ctx, "sqlite:"+path, hopper.Config{Workers: ws, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnqueueFunc(ctx, func(context.Context) (any, error) { return nil, nil }, nil); !errors.Is(err, hopper.ErrNotDurable) {
		t.Fatalf("EnqueueFunc on SQLite: got %v, want ErrNotDurable", err)
	}
	if _, err := c.AddSchedule(ctx, "nightly", hopper.ScheduleOptions{Cron: "0 2 * * *", TimeZone: "Europe/Berlin", Kind: "double", Args: 1}); err != nil {
		t.Fatal(err)
	}
	c.Start()
	r, err := c.Enqueue(ctx, "double", 21, nil)
	if err != nil {
		t.Fatal(err)
	}
	j, err := c.Wait(ctx, r.ID)
	if err != nil || j.State != hopper.StateCompleted {
		t.Fatalf("Wait: %v %v", j, err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	c2, err := hopper.Open(ctx, "sqlite:"+path, hopper.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Stop(ctx)
	j, err = c2.Get(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got int
	json.Unmarshal(j.Result, &got)
	if j.State != hopper.StateCompleted || got != 42 || len(j.Attempts) != 1 {
		t.Errorf("after reopen: state %s result %d attempts %d, want completed 42 1", j.State, got, len(j.Attempts))
	}
	if sc, err := c2.GetSchedule(ctx, "nightly"); err != nil || sc.TimeZone != "Europe/Berlin" {
		t.Errorf("schedule after reopen: %+v, %v", sc, err)
	}
	if _, err := hopper.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"), hopper.Config{}); err == nil {
		t.Error("Open in a missing directory: want an error")
	}
	if _, err := hopper.Open(ctx, "nosuch://x", hopper.Config{}); err == nil || !strings.Contains(err.Error(), "sqlite") {
		t.Errorf("Open of an unknown scheme: got %v, want an error listing the registered ones", err)
	}
}
