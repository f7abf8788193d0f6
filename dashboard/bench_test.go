package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/internal/dashtest"
)

// BenchmarkPages measures the dashboard's pages against a SQLite store of
// a million jobs, as an operator's browser asks for them (one at a time),
// and reports each page's p50 and p99:
//
//	go test -run '^$' -bench Pages -benchtime 300x ./dashboard
//
// The store is built once (about two minutes) in
// $TMPDIR/hopper-dashboard-bench-v1.db and reused; delete its .built
// marker to rebuild.
// Counts come from the cache the dashboard keeps (refreshed in the
// background), as in a running server.
func BenchmarkPages(b *testing.B) {
	path := benchStore(b)
	ctx := context.Background()
	c, err := hopper.Open(ctx, "sqlite:"+path, hopper.Config{Logger: dashtest.Quiet()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.StopNow()
	h := New(c, Options{Logger: dashtest.Quiet()}).(*handler)
	defer h.Close()
	mid, err := c.List(ctx, hopper.ListOptions{Limit: 1, AfterID: 500_000})
	if err != nil || len(mid) == 0 {
		b.Fatalf("the store has no job 500,001: %v", err)
	}
	pages := []struct{ name, path string }{
		{"overview", "/"},
		{"jobs", "/jobs"},
		{"jobs_available", "/jobs?state=available"},
		{"jobs_completed_queue", "/jobs?state=completed&queue=webhooks"},
		{"jobs_kind", "/jobs?kind=resize_image"},
		{"jobs_deep_page", "/jobs?after=500000"},
		{"jobs_newer_page", "/jobs?before=500000"},
		{"dlq", "/dlq"},
		{"dlq_queue", "/dlq?queue=webhooks"},
		{"job", fmt.Sprintf("/jobs/%d", mid[0].ID)},
		{"schedules", "/schedules"},
		{"queues", "/queues"},
	}
	get := func(path string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", path, w.Code, w.Body.String())
		}
	}
	for _, p := range pages {
		get(p.path) // warm the counts and the page cache
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				t0 := time.Now()
				get(p.path)
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))].Microseconds()) / 1000 }
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
		})
	}
}

// benchStore returns the path of the benchmark's store of a million jobs,
// building it if needed: 950,000 jobs run (send_email, resize_image and
// webhook; one webhook in eight fails for good), then 35,000 available,
// 10,000 scheduled, 5,000 retrying and 5,000 cancelled jobs, and three
// schedules.
func benchStore(b *testing.B) string {
	path := filepath.Join(os.TempDir(), "hopper-dashboard-bench-v1.db")
	built := path + ".built" // written last: a store without it is half built
	if _, err := os.Stat(built); err == nil {
		return path
	}
	b.Logf("building %s (a million jobs; about two minutes)", path)
	for _, suffix := range []string{"", "-wal", "-shm", "-workers"} {
		os.RemoveAll(path + suffix)
	}
	tmp := path
	ctx := context.Background()
	ws := hopper.NewWorkers()
	ok := func(ctx context.Context, _ json.RawMessage) (any, error) { return map[string]any{"ok": true}, nil }
	hopper.RegisterRaw(ws, "send_email", ok, &hopper.EnqueueOptions{Queue: "emails"})
	hopper.RegisterRaw(ws, "resize_image", ok, &hopper.EnqueueOptions{Queue: "images"})
	hopper.RegisterRaw(ws, "webhook", func(ctx context.Context, _ json.RawMessage) (any, error) {
		if hopper.JobFromContext(ctx).ID%8 == 0 {
			return nil, hopper.Permanent(errors.New("POST https://hooks.example.com/x: 410 Gone"))
		}
		return map[string]any{"status": 200}, nil
	}, &hopper.EnqueueOptions{Queue: "webhooks"})
	hour := backoff.Fixed(time.Hour)
	hopper.RegisterRaw(ws, "sync_crm", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return nil, errors.New("crm: 503 Service Unavailable")
	}, &hopper.EnqueueOptions{Queue: "crm", Retry: &hour})
	c, err := hopper.Open(ctx, "sqlite:"+tmp, hopper.Config{Workers: ws, Logger: dashtest.Quiet(), Concurrency: 200,
		CompletedRetention: -1, CancelledRetention: -1, DeadRetention: -1, DeadMaxCount: -1})
	if err != nil {
		b.Fatal(err)
	}
	enqueue := func(n int, kind string, o *hopper.EnqueueOptions) hopper.ID {
		var last hopper.ID
		for n > 0 {
			batch := make([]hopper.EnqueueRequest, min(n, 5000))
			for i := range batch {
				batch[i] = hopper.EnqueueRequest{Kind: kind, Args: json.RawMessage(`{"to":"user@example.com","template":"welcome"}`), Options: o}
			}
			res, err := c.EnqueueMany(ctx, batch)
			if err != nil {
				b.Fatal(err)
			}
			last = res[len(res)-1].ID
			n -= len(batch)
		}
		return last
	}
	var last hopper.ID
	for range 19 { // interleaved, as they come in a real store
		enqueue(30_000, "send_email", nil)
		enqueue(12_500, "resize_image", nil)
		last = enqueue(7_500, "webhook", nil)
	}
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	for {
		if _, err := c.Wait(ctx, last); err != nil {
			b.Fatal(err)
		}
		left, err := c.List(ctx, hopper.ListOptions{States: []hopper.State{hopper.StateAvailable, hopper.StateRunning}, Limit: 1, Desc: true})
		if err != nil {
			b.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		last = left[0].ID
	}
	if err := c.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	c, err = hopper.Open(ctx, "sqlite:"+tmp, hopper.Config{Workers: ws, Logger: dashtest.Quiet(),
		CompletedRetention: -1, CancelledRetention: -1, DeadRetention: -1, DeadMaxCount: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer c.StopNow()
	enqueue(5_000, "sync_crm", nil)
	if _, err := c.RunReady(ctx, time.Now()); err != nil { // each fails once, retrying in an hour
		b.Fatal(err)
	}
	enqueue(35_000, "send_email", nil)
	enqueue(10_000, "resize_image", &hopper.EnqueueOptions{Delay: 24 * time.Hour})
	first := enqueue(1, "webhook", &hopper.EnqueueOptions{Delay: 24 * time.Hour})
	enqueue(4_999, "webhook", &hopper.EnqueueOptions{Delay: 24 * time.Hour})
	for id := first; id < first+5000; id++ {
		if _, err := c.Cancel(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	for i, spec := range []string{"0 2 * * *", "*/5 * * * *", "0 9 * * 1-5"} {
		if _, err := c.AddSchedule(ctx, fmt.Sprintf("schedule-%d", i), hopper.ScheduleOptions{Cron: spec, TimeZone: "Europe/Berlin", Kind: "send_email"}); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.StopNow(); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(built, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}
