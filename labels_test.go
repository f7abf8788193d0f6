package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// TestMetaAndTags: a job's metadata and tags are kept, an enqueue
// middleware adds to them without touching the caller's map, List and
// Count filter by tag, a schedule gives its own to each job it fires, and
// bad ones are refused naming the field.
func TestMetaAndTags(t *testing.T) {
	t.Parallel()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "k", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
	c := silentClient(t, hopper.Config{Workers: ws, Middleware: []hopper.Middleware{{
		Enqueue: func(_ context.Context, r *hopper.EnqueueRequest) (func(hopper.EnqueueResult, error), error) {
			r.Options.Meta["added"] = "yes"
			return nil, nil
		},
	}}})
	ctx := context.Background()
	meta := map[string]string{"tenant": "acme"}
	res, err := c.Enqueue(ctx, "k", nil, &hopper.EnqueueOptions{Meta: meta, Tags: []string{"billing", "eu"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, "k", nil, &hopper.EnqueueOptions{Tags: []string{"eu"}}); err != nil {
		t.Fatal(err)
	}
	j, _ := c.Get(ctx, res.ID)
	if !maps.Equal(j.Meta, map[string]string{"tenant": "acme", "added": "yes"}) || !slices.Equal(j.Tags, []string{"billing", "eu"}) {
		t.Errorf("job meta %v tags %q", j.Meta, j.Tags)
	}
	if len(meta) != 1 {
		t.Errorf("the caller's map changed: %v", meta)
	}
	if js, _ := c.List(ctx, hopper.ListOptions{Tag: "billing"}); len(js) != 1 || js[0].ID != res.ID {
		t.Errorf("List(tag billing): %v", js)
	}
	if n, _ := c.Count(ctx, hopper.ListOptions{Tag: "eu"}); n != 2 {
		t.Errorf("Count(tag eu): %d, want 2", n)
	}
	if _, err := c.AddSchedule(ctx, "tagged", hopper.ScheduleOptions{Every: time.Hour, Kind: "k",
		Options: &hopper.EnqueueOptions{Tags: []string{"cron"}, Meta: map[string]string{"from": "schedule"}}}); err != nil {
		t.Fatal(err)
	}
	c.FireSchedules(ctx, farFuture)
	fired, _ := c.List(ctx, hopper.ListOptions{Tag: "cron"})
	if len(fired) != 1 || fired[0].Meta["from"] != "schedule" || fired[0].Schedule != "tagged" {
		t.Errorf("the schedule's jobs: %+v", fired)
	}
	for _, tc := range []struct {
		opts  hopper.EnqueueOptions
		field string
	}{
		{hopper.EnqueueOptions{Tags: []string{"has space"}}, "tags"},
		{hopper.EnqueueOptions{Tags: []string{strings.Repeat("t", hopper.MaxTagSize+1)}}, "tags"},
		{hopper.EnqueueOptions{Tags: make([]string, hopper.MaxTags+1)}, "tags"},
		{hopper.EnqueueOptions{Meta: map[string]string{"big": strings.Repeat("v", hopper.MaxMetaSize)}}, "meta"},
		{hopper.EnqueueOptions{Meta: map[string]string{"nul": "a\x00b"}}, "meta"},
	} {
		_, err := c.Enqueue(ctx, "k", nil, &tc.opts)
		var fe *hopper.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Enqueue(%.60v): %v, want a *FieldError on %s", tc.opts, err, tc.field)
		}
	}
	if _, err := c.List(ctx, hopper.ListOptions{Tag: "a,b"}); err == nil {
		t.Error("List(tag a,b): no error")
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("Register with kind-level tags: no panic")
		}
	}()
	hopper.RegisterRaw(hopper.NewWorkers(), "x", nil, &hopper.EnqueueOptions{Tags: []string{"t"}})
}
