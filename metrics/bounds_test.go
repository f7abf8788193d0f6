package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// sum adds up the samples of a metric, over every label.
func sum(got map[string]float64, name string) float64 {
	n := 0.0
	for series, v := range got {
		if series == name || strings.HasPrefix(series, name+"{") {
			n += v
		}
	}
	return n
}

// TestCardinalityBounded: 2,000 jobs in 2,000 new queues, enqueued in one
// batch and run, make a scrape of at most MaxQueueKinds (queue, kind)
// pairs and MaxQueues queues, the rest counted under "(other)": the
// totals stay exact.
func TestCardinalityBounded(t *testing.T) {
	t.Parallel()
	const queues = 2000
	m := New(Options{NoPool: true, StatsMaxAge: time.Nanosecond})
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "ok", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler), OnEvent: m.OnEvent, OnStoreCall: m.OnStoreCall})
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	m.Attach(c)
	ctx := context.Background()
	reqs := make([]hopper.EnqueueRequest, queues)
	for i := range reqs {
		reqs[i] = hopper.EnqueueRequest{Kind: "ok", Options: &hopper.EnqueueOptions{Queue: fmt.Sprintf("q%04d", i)}}
	}
	if _, err := c.EnqueueMany(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if ran, err := c.RunReady(ctx, time.Now()); err != nil || len(ran) != queues {
		t.Fatalf("RunReady: %d jobs, %v", len(ran), err)
	}
	text := scrapeText(t, m)
	series := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "hopper_") {
			series++
		}
	}
	t.Logf("scrape after %d new queues: %d bytes, %d hopper_ series", queues, len(text), series)
	// The bound of docs/metrics.md: with one kind, each of the 101 pairs
	// has 1 enqueued, 1 finished, 20 wait and 20 duration series; each of
	// the 101 queue labels 7 job gauges and 1 age; and the store's ops.
	if series > 6000 || len(text) > 1<<20 {
		t.Errorf("scrape after %d new queues: %d bytes, %d hopper_ series; want at most 1 MiB and 6,000", queues, len(text), series)
	}
	got := parse(t, text)
	for _, c := range []struct {
		name string
		want float64
	}{
		{"hopper_jobs_enqueued_total", queues},
		{"hopper_jobs_finished_total", queues},
		{"hopper_job_wait_seconds_count", queues},
		{"hopper_job_duration_seconds_count", queues},
		{"hopper_jobs", queues},
	} {
		if n := sum(got, c.name); n != c.want {
			t.Errorf("%s sums to %v over its labels, want %v", c.name, n, c.want)
		}
	}
	// The first pairs counted keep their names, the rest are (other).
	for series, want := range map[string]float64{
		`hopper_jobs_enqueued_total{kind="ok",queue="q0000"}`:                                 1,
		`hopper_jobs_enqueued_total{kind="ok",queue="q0099"}`:                                 1,
		`hopper_jobs_enqueued_total{kind="(other)",queue="(other)"}`:                          queues - DefaultMaxQueueKinds,
		`hopper_jobs_finished_total{kind="(other)",queue="(other)",state="completed"}`:        queues - DefaultMaxQueueKinds,
		`hopper_job_duration_seconds_count{kind="(other)",queue="(other)",state="completed"}`: queues - DefaultMaxQueueKinds,
		`hopper_jobs{queue="q0000",state="completed"}`:                                        1,
		`hopper_jobs{queue="q0099",state="completed"}`:                                        1,
		`hopper_jobs{queue="(other)",state="completed"}`:                                      queues - DefaultMaxQueues,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
	if _, ok := got[`hopper_jobs_enqueued_total{kind="ok",queue="q0100"}`]; ok {
		t.Error("the 101st pair has its own series")
	}
	// The gauges keep the queues with the most jobs: a queue that gets
	// busy takes a place; the counters keep theirs.
	more := make([]hopper.EnqueueRequest, 5)
	for i := range more {
		more[i] = hopper.EnqueueRequest{Kind: "ok", Options: &hopper.EnqueueOptions{Queue: "q1999"}}
	}
	if _, err := c.EnqueueMany(ctx, more); err != nil {
		t.Fatal(err)
	}
	got = parse(t, scrapeText(t, m))
	for series, want := range map[string]float64{
		`hopper_jobs{queue="q1999",state="available"}`:               5,
		`hopper_jobs{queue="q1999",state="completed"}`:               1,
		`hopper_jobs{queue="(other)",state="completed"}`:             queues - DefaultMaxQueues, // q1999's in, q0099's out
		`hopper_oldest_available_job_age_seconds{queue="(other)"}`:   0,
		`hopper_jobs_enqueued_total{kind="(other)",queue="(other)"}`: queues - DefaultMaxQueueKinds + 5,
	} {
		if v, ok := got[series]; !ok || (v != want && !strings.HasPrefix(series, "hopper_oldest")) {
			t.Errorf("after 5 more jobs in q1999: %s = %v (present %v), want %v", series, v, ok, want)
		}
	}
	if _, ok := got[`hopper_jobs{queue="q0099",state="completed"}`]; ok {
		t.Error("q0099 still has its own job gauges after q1999 outgrew it")
	}
}
