package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/internal/logtest"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store/memstore"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scrape GETs the metrics from m and returns each sample by its series
// (name and labels, as the exposition format writes them).
func scrape(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	return parse(t, scrapeText(t, m))
}

// scrapeText GETs the metrics from m, over HTTP, as text.
func scrapeText(t *testing.T, m *Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("scrape: %d %v %s", res.StatusCode, err, b)
	}
	return string(b)
}

// parse reads the samples of an exposition by series.
func parse(t *testing.T, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// TestScrapeAfterWorkload runs a known workload on a started client and
// checks what a scrape of /metrics reports.
func TestScrapeAfterWorkload(t *testing.T) {
	t.Parallel()
	m := New(Options{StatsMaxAge: time.Nanosecond})
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "ok", func(ctx context.Context, args json.RawMessage) (any, error) { return nil, nil }, nil)
	hopper.RegisterRaw(ws, "fail", func(ctx context.Context, args json.RawMessage) (any, error) {
		return nil, errors.New("failing on purpose")
	}, nil)
	c, err := hopper.NewClient(hopper.Config{
		Workers: ws, Concurrency: 4, Logger: slog.New(slog.DiscardHandler),
		Queues:  map[string]hopper.QueueConfig{"a": {}, "b": {}}, // not "idle"
		OnEvent: m.OnEvent, OnStoreCall: m.OnStoreCall,
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Attach(c)
	sub := c.Subscribe(job.EventCompleted, job.EventDead)
	ctx := context.Background()
	fixed := backoff.Fixed(time.Millisecond)
	var reqs []hopper.EnqueueRequest
	for range 10 {
		reqs = append(reqs, hopper.EnqueueRequest{Kind: "ok", Options: &hopper.EnqueueOptions{Queue: "a"}})
	}
	for range 3 {
		reqs = append(reqs, hopper.EnqueueRequest{Kind: "fail", Options: &hopper.EnqueueOptions{Queue: "b", MaxAttempts: 2, Retry: &fixed}})
	}
	for range 2 {
		reqs = append(reqs, hopper.EnqueueRequest{Kind: "ok", Options: &hopper.EnqueueOptions{Queue: "idle"}})
	}
	if _, err := c.EnqueueMany(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	// Subscribers see an event after OnEvent has counted it.
	for n := 0; n < 13; n++ {
		<-sub.C
	}

	got := scrape(t, m)
	for series, want := range map[string]float64{
		`hopper_jobs_enqueued_total{kind="ok",queue="a"}`:                           10,
		`hopper_jobs_enqueued_total{kind="fail",queue="b"}`:                         3,
		`hopper_jobs_enqueued_total{kind="ok",queue="idle"}`:                        2,
		`hopper_jobs_finished_total{kind="ok",queue="a",state="completed"}`:         10,
		`hopper_jobs_finished_total{kind="fail",queue="b",state="dead"}`:            3,
		`hopper_attempt_failures_total{kind="fail",queue="b",reason="error"}`:       6,
		`hopper_job_duration_seconds_count{kind="ok",queue="a",state="completed"}`:  10,
		`hopper_job_duration_seconds_count{kind="fail",queue="b",state="retrying"}`: 3,
		`hopper_job_duration_seconds_count{kind="fail",queue="b",state="dead"}`:     3,
		`hopper_job_wait_seconds_count{kind="ok",queue="a"}`:                        10,
		`hopper_job_wait_seconds_count{kind="fail",queue="b"}`:                      6,
		`hopper_jobs{queue="a",state="completed"}`:                                  10,
		`hopper_jobs{queue="a",state="available"}`:                                  0,
		`hopper_jobs{queue="b",state="dead"}`:                                       3,
		`hopper_jobs{queue="idle",state="available"}`:                               2,
		`hopper_oldest_available_job_age_seconds{queue="a"}`:                        0,
		`hopper_workers`:  4,
		`hopper_stats_up`: 1,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
	if age, ok := got[`hopper_oldest_available_job_age_seconds{queue="idle"}`]; !ok || age < 0 {
		t.Errorf("oldest available job of queue idle: %v (present %v)", age, ok)
	}
	if busy := got[`hopper_workers_busy`]; busy < 0 || busy > 4 {
		t.Errorf("busy workers %v", busy)
	}
	got2 := scrape(t, m) // the first scrape's stats read shows from the second on
	if n := got2[`hopper_store_operation_duration_seconds_count{op="stats"}`]; n < 1 {
		t.Errorf("store operation stats observed %v times", n)
	}
	for _, op := range []string{"enqueue", "claim", "finish"} {
		if n := got[`hopper_store_operation_duration_seconds_count{op="`+op+`"}`]; n < 1 {
			t.Errorf("store operation %s observed %v times", op, n)
		}
	}
	for series := range got {
		for _, bad := range []string{`id="`, `job="`, `error="`} {
			if strings.Contains(series, bad) {
				t.Errorf("a label that grows without bound: %s", series)
			}
		}
	}
	if _, ok := got["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}
}

// TestLeaderGauge: hopper_leader is 1 in the process that leads the
// servers sharing the store, 0 in the others and before Start and after
// Stop.
func TestLeaderGauge(t *testing.T) {
	t.Parallel()
	ms := memstore.New()
	client := func(m *Metrics, logger *slog.Logger) *hopper.Client {
		c, err := hopper.NewClient(hopper.Config{Store: ms, Logger: logger, OnEvent: m.OnEvent, OnStoreCall: m.OnStoreCall})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.StopNow() })
		m.Attach(c)
		return c
	}
	leading := make(chan struct{}, 1)
	m1, m2 := New(Options{}), New(Options{})
	c1 := client(m1, logtest.Signal("leading maintenance", leading))
	c2 := client(m2, slog.New(slog.DiscardHandler))
	if v, ok := scrape(t, m1)["hopper_leader"]; !ok || v != 0 {
		t.Errorf("before Start: hopper_leader = %v (present %v), want 0", v, ok)
	}
	if err := c1.Start(); err != nil {
		t.Fatal(err)
	}
	<-leading
	if err := c2.Start(); err != nil {
		t.Fatal(err)
	}
	if v := scrape(t, m1)["hopper_leader"]; v != 1 {
		t.Errorf("the leader: hopper_leader = %v, want 1", v)
	}
	if v, ok := scrape(t, m2)["hopper_leader"]; !ok || v != 0 {
		t.Errorf("the other server: hopper_leader = %v (present %v), want 0", v, ok)
	}
	if err := c1.StopNow(); err != nil {
		t.Fatal(err)
	}
	if v := scrape(t, m1)["hopper_leader"]; v != 0 {
		t.Errorf("after Stop: hopper_leader = %v, want 0", v)
	}
}

// TestOwnRegistry: an application registers the metrics in its own
// registry; without Attach only the event-fed metrics are there.
func TestOwnRegistry(t *testing.T) {
	t.Parallel()
	m := New(Options{})
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatal(err)
	}
	m.OnEvent(hopper.Event{Type: job.EventEnqueued, Job: &hopper.Job{Queue: "q", Kind: "k"}})
	m.OnStoreCall("enqueue", time.Millisecond, nil)
	m.OnStoreCall("claim", time.Millisecond, errors.New("disk full"))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, want := range []string{"hopper_jobs_enqueued_total", "hopper_store_operation_duration_seconds", "hopper_store_operation_errors_total"} {
		if !names[want] {
			t.Errorf("%s not gathered: %v", want, names)
		}
	}
	if names["hopper_jobs"] || names["hopper_stats_up"] {
		t.Errorf("gauges without an attached client: %v", names)
	}
}

// TestEventClassification: which transitions count as finished jobs,
// failed attempts and handler time.
func TestEventClassification(t *testing.T) {
	t.Parallel()
	m := New(Options{NoPool: true})
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := func(attempt int, outcome string) []hopper.Attempt {
		return []hopper.Attempt{{Attempt: attempt, StartedAt: now, Duration: time.Second, Outcome: outcome}}
	}
	for _, ev := range []hopper.Event{
		// Started after waiting 3s past its run-at.
		{Type: job.EventStarted, Job: &hopper.Job{Queue: "q", Kind: "k", State: hopper.StateRunning, Attempt: 1,
			RunAt: now.Add(-3 * time.Second), CreatedAt: now.Add(-time.Hour), StartedAt: now}},
		// A waiting job cancelled: finished, no attempt ended.
		{Type: job.EventCancelled, Job: &hopper.Job{Queue: "q", Kind: "k", State: hopper.StateCancelled, Attempt: 1, Attempts: rec(1, "retrying")}},
		// A retrying job superseded by its schedule's next tick: dead, no attempt failed.
		{Type: job.EventDead, Job: &hopper.Job{Queue: "q", Kind: "k", State: hopper.StateDead, Attempt: 1, Attempts: rec(1, "retrying")}},
		// A worker died under the job for the last time: dead, interrupted.
		{Type: job.EventDead, Job: &hopper.Job{Queue: "q", Kind: "k", State: hopper.StateDead, Attempt: 1, StartedAt: now,
			FinishedAt: now.Add(time.Minute), Attempts: rec(1, job.OutcomeInterrupted)}},
		// A worker died, the job waits again.
		{Type: job.EventRescued, Job: &hopper.Job{Queue: "q", Kind: "k", State: hopper.StateAvailable, Attempt: 1, Attempts: rec(1, job.OutcomeInterrupted)}},
		// A handler failed for good.
		{Type: job.EventDead, Job: &hopper.Job{Queue: "q", Kind: "k", State: hopper.StateDead, Attempt: 2, Attempts: rec(2, "dead")}},
	} {
		m.OnEvent(ev)
	}
	m.OnEvent(hopper.Event{Type: job.EventDead}) // no job: ignored
	c, err := hopper.NewClient(hopper.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	m.Attach(c)
	got := scrape(t, m)
	for series, want := range map[string]float64{
		`hopper_jobs_finished_total{kind="k",queue="q",state="cancelled"}`:       1,
		`hopper_jobs_finished_total{kind="k",queue="q",state="dead"}`:            3,
		`hopper_attempt_failures_total{kind="k",queue="q",reason="interrupted"}`: 2,
		`hopper_attempt_failures_total{kind="k",queue="q",reason="error"}`:       1,
		`hopper_job_duration_seconds_count{kind="k",queue="q",state="dead"}`:     1,
		`hopper_job_wait_seconds_sum{kind="k",queue="q"}`:                        3,
		`hopper_stats_up`: 1,
	} {
		if v := got[series]; v != want {
			t.Errorf("%s = %v, want %v", series, v, want)
		}
	}
	if _, ok := got["hopper_workers"]; ok {
		t.Error("hopper_workers exported with NoPool")
	}
}

// TestBulkActionsCounted: a bulk cancel reports every job it cancels, so
// the finished counter and the store operations' latency include it.
func TestBulkActionsCounted(t *testing.T) {
	t.Parallel()
	m := New(Options{NoPool: true})
	c, err := hopper.NewClient(hopper.Config{Logger: slog.New(slog.DiscardHandler), ExternalKinds: []string{"k"},
		OnEvent: m.OnEvent, OnStoreCall: m.OnStoreCall})
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	m.Attach(c)
	ctx := context.Background()
	const n = hopper.BulkBatch + 10
	reqs := make([]hopper.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = hopper.EnqueueRequest{Kind: "k", Options: &hopper.EnqueueOptions{Queue: "q", Delay: time.Hour}}
	}
	if _, err := c.EnqueueMany(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if res, err := c.CancelMatching(ctx, hopper.BulkOptions{Queue: "q"}); err != nil || res.Done != n {
		t.Fatalf("CancelMatching: %+v, %v; want %d cancelled", res, err, n)
	}
	got := scrape(t, m)
	for series, want := range map[string]float64{
		`hopper_jobs_finished_total{kind="k",queue="q",state="cancelled"}`:    n,
		`hopper_store_operation_duration_seconds_count{op="cancel_matching"}`: 2,
	} {
		if v := got[series]; v != want {
			t.Errorf("%s = %v, want %v", series, v, want)
		}
	}
}

// TestQueuePausedGauges: a paused queue has hopper_queue_paused 1 and its
// ready jobs in hopper_queue_held_jobs; an active queue has neither.
func TestQueuePausedGauges(t *testing.T) {
	t.Parallel()
	m := New(Options{})
	c, err := hopper.NewClient(hopper.Config{Logger: slog.New(slog.DiscardHandler), OnEvent: m.OnEvent,
		OnStoreCall: m.OnStoreCall, ExternalKinds: []string{"remote"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.StopNow() })
	m.Attach(c)
	ctx := context.Background()
	for _, q := range []string{"mail", "mail", "other"} {
		if _, err := c.Enqueue(ctx, "remote", nil, &hopper.EnqueueOptions{Queue: q}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.PauseQueue(ctx, "mail"); err != nil {
		t.Fatal(err)
	}
	got := scrape(t, m)
	if v := got[`hopper_queue_paused{queue="mail"}`]; v != 1 {
		t.Errorf(`hopper_queue_paused{queue="mail"} = %v, want 1`, v)
	}
	if v := got[`hopper_queue_held_jobs{queue="mail"}`]; v != 2 {
		t.Errorf(`hopper_queue_held_jobs{queue="mail"} = %v, want 2`, v)
	}
	if _, ok := got[`hopper_queue_paused{queue="other"}`]; ok {
		t.Errorf("an active queue has hopper_queue_paused")
	}
	if err := c.ResumeQueue(ctx, "mail"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetQueueConcurrency(ctx, "other", 3); err != nil {
		t.Fatal(err)
	}
	got = scrape(t, m)
	if _, ok := got[`hopper_queue_paused{queue="mail"}`]; ok {
		t.Errorf("a resumed queue has hopper_queue_paused")
	}
	if v := got[`hopper_queue_concurrency_limit{queue="other"}`]; v != 3 {
		t.Errorf(`hopper_queue_concurrency_limit{queue="other"} = %v, want 3`, v)
	}
	if v, ok := got[`hopper_queue_held_jobs{queue="other"}`]; !ok || v != 0 {
		t.Errorf(`hopper_queue_held_jobs{queue="other"} = %v (present %v), want 0: under its limit`, v, ok)
	}
	if err := c.SetQueueKeyConcurrency(ctx, "other", 2); err != nil {
		t.Fatal(err)
	}
	if err := c.PauseKey(ctx, "other", "tenant=1"); err != nil {
		t.Fatal(err)
	}
	got = scrape(t, m)
	if v, ok := got[`hopper_queue_key_held_jobs{queue="other"}`]; !ok || v != 0 {
		t.Errorf(`hopper_queue_key_held_jobs{queue="other"} = %v (present %v), want 0: the paused key has no job`, v, ok)
	}
	if v := got[`hopper_queue_key_concurrency_limit{queue="other"}`]; v != 2 {
		t.Errorf(`hopper_queue_key_concurrency_limit{queue="other"} = %v, want 2`, v)
	}
	if v := got[`hopper_queue_keys_blocked{queue="other",reason="paused"}`]; v != 1 {
		t.Errorf(`hopper_queue_keys_blocked{queue="other",reason="paused"} = %v, want 1`, v)
	}
}

// TestQueueThrottledGauges: a throttled queue has its rate per second and
// the ready jobs its throttle holds back.
func TestQueueThrottledGauges(t *testing.T) {
	t.Parallel()
	m, c := okClient(t)
	ctx := context.Background()
	if err := c.SetQueueRate(ctx, "api", hopper.Rate{N: 36, Period: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Enqueue(ctx, "ok", nil, &hopper.EnqueueOptions{Queue: "api"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := c.ProcessNext(ctx, time.Now()); !ok || err != nil {
		t.Fatalf("ProcessNext: %v, %v", ok, err)
	}
	got := scrape(t, m)
	if v := got[`hopper_queue_rate_limit{queue="api"}`]; v != 0.01 {
		t.Errorf(`hopper_queue_rate_limit{queue="api"} = %v, want 0.01`, v)
	}
	if v := got[`hopper_queue_throttled_jobs{queue="api"}`]; v != 2 {
		t.Errorf(`hopper_queue_throttled_jobs{queue="api"} = %v, want 2`, v)
	}
	if v := got[`hopper_queue_held_jobs{queue="api"}`]; v != 2 {
		t.Errorf(`hopper_queue_held_jobs{queue="api"} = %v, want 2`, v)
	}
}

// TestQueueKeyThrottledGauges: a queue throttled per key has its rate per
// key per second, its throttled keys are counted among its blocked keys,
// and their waiting jobs in hopper_queue_key_held_jobs.
func TestQueueKeyThrottledGauges(t *testing.T) {
	t.Parallel()
	m, c := okClient(t)
	ctx := context.Background()
	if err := c.SetQueueKeyRate(ctx, "api", hopper.Rate{N: 36, Period: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a", "a", "b", "b", "c"} {
		if _, err := c.Enqueue(ctx, "ok", nil, &hopper.EnqueueOptions{Queue: "api", Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	if ran, err := c.RunReady(ctx, time.Now()); len(ran) != 3 || err != nil {
		t.Fatalf("RunReady: %d, %v; want one job of each key", len(ran), err)
	}
	got := scrape(t, m)
	if v := got[`hopper_queue_key_rate_limit{queue="api"}`]; v != 0.01 {
		t.Errorf(`hopper_queue_key_rate_limit{queue="api"} = %v, want 0.01`, v)
	}
	if v := got[`hopper_queue_keys_blocked{queue="api",reason="throttled"}`]; v != 3 {
		t.Errorf(`hopper_queue_keys_blocked{queue="api",reason="throttled"} = %v, want 3`, v)
	}
	if v := got[`hopper_queue_key_held_jobs{queue="api"}`]; v != 2 {
		t.Errorf(`hopper_queue_key_held_jobs{queue="api"} = %v, want 2: the second jobs of a and b`, v)
	}
	if v, ok := got[`hopper_queue_held_jobs{queue="api"}`]; ok && v != 0 {
		t.Errorf(`hopper_queue_held_jobs{queue="api"} = %v, want 0: the queue holds nothing itself`, v)
	}
}

// okClient returns Metrics attached to a client (memory store, not
// started) whose kind "ok" succeeds.
func okClient(t *testing.T) (*Metrics, *hopper.Client) {
	t.Helper()
	m := New(Options{})
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "ok", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
	c, err := hopper.NewClient(hopper.Config{Logger: slog.New(slog.DiscardHandler), OnEvent: m.OnEvent,
		OnStoreCall: m.OnStoreCall, Workers: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.StopNow() })
	m.Attach(c)
	return m, c
}
