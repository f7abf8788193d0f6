// Package metrics exports a Hopper client's metrics to Prometheus.
//
// Counters and histograms are fed by the client's synchronous hooks,
// Config.OnEvent and Config.OnStoreCall, which see every transition and
// every store operation the client makes and never drop one (unlike
// Subscribe, whose buffers drop for slow readers). Gauges — jobs by queue
// and state, the age of each queue's oldest ready job, busy and total
// workers, whether this process leads — are read from the client when Prometheus scrapes, the counts
// from the client's stats cache (Client.StatsCached): scrapes within
// Options.StatsMaxAge of each other share one count of the store.
//
//	m := metrics.New(metrics.Options{})
//	cfg.OnEvent, cfg.OnStoreCall = m.OnEvent, m.OnStoreCall
//	client, err := hopper.Open(ctx, "sqlite:app.db", cfg)
//	...
//	m.Attach(client)
//	mux.Handle("/metrics", m.Handler())
//
// An application with a registry of its own registers m in it instead of
// using Handler: m is a prometheus.Collector.
//
// Labels are queue, kind, state, reason, op, and for remote workers worker
// (the name a remote worker registered with) and outcome. No job ID, args or error
// text is ever a label. Queue and kind names come from whoever enqueues,
// so they are bounded: the counters and histograms keep the first
// Options.MaxQueueKinds (queue, kind) pairs they count, the job gauges the
// Options.MaxQueues queues with the most jobs, and the rest is counted
// under the label value Other, "(other)": sums over a metric's labels stay
// exact. Remote workers' names come from the workers: the first
// Options.MaxRemoteWorkers names keep theirs, the rest count under Other. The metrics are listed in docs/metrics.md.
package metrics

import (
	"cmp"
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// StatsWindow is the "finished lately" window of the counts a scrape
// reads: none. The metrics do not use those counts, and they are the
// expensive part of a count of the store (on SQLite with 1M jobs, 0.28 s
// with a one-hour window against 18 ms without:
// docs/measurements/performance-log.md).
const StatsWindow time.Duration = 0

// Defaults of Options.
const (
	DefaultStatsMaxAge  = 5 * time.Second
	DefaultStatsTimeout = 5 * time.Second
)

// Options configure the metrics. The zero value is usable.
type Options struct {
	// StatsMaxAge is how old the job counts a scrape reports may be
	// (default DefaultStatsMaxAge, 5s): scrapes within it share one count
	// of the store (Client.StatsCached).
	StatsMaxAge time.Duration
	// StatsTimeout bounds the store read of a scrape (default 5s); when it
	// fails, hopper_stats_up is 0 and the job gauges are left out.
	StatsTimeout time.Duration
	// NoPool leaves out the worker gauges, for a client that is never
	// started (a process serving only the API or the dashboard).
	NoPool bool
	// MaxQueueKinds bounds the (queue, kind) label pairs of the counters
	// and histograms (default DefaultMaxQueueKinds, 100): the first pairs
	// this process counts keep their names, for good (a counter must not
	// move); the jobs of later pairs are counted under queue and kind
	// Other.
	MaxQueueKinds int
	// MaxQueues bounds the queues of the job gauges, hopper_jobs and
	// hopper_oldest_available_job_age_seconds (default DefaultMaxQueues,
	// 100): with more queues in the store, those with the most jobs (ties
	// by name) keep their names at each scrape, and the others are summed
	// under queue Other (their oldest available job for the age).
	MaxQueues int
	// MaxRemoteWorkers bounds the worker label of
	// hopper_remote_worker_jobs_total (default DefaultMaxRemoteWorkers,
	// 100): the first names of remote workers this process counts keep
	// them, for good; the jobs of workers with later names are counted
	// under worker Other.
	MaxRemoteWorkers int
}

// Buckets of the histograms, in seconds.
var (
	// JobBuckets are the buckets of the handler duration and the wait
	// from ready to start: 1ms to 1h.
	JobBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
	// StoreBuckets are the buckets of store operation latency: 50µs to 5s.
	StoreBuckets = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}
)

// Metrics holds a client's metrics. Its OnEvent and OnStoreCall methods go
// into the client's Config; Attach gives it the client for the gauges.
// It is safe for concurrent use.
type Metrics struct {
	o        Options
	enqueued *prometheus.CounterVec
	finished *prometheus.CounterVec
	failures *prometheus.CounterVec
	duration *prometheus.HistogramVec
	wait     *prometheus.HistogramVec
	storeDur *prometheus.HistogramVec
	storeErr *prometheus.CounterVec
	// authFailures counts the HTTP server's refusals (http.go).
	authFailures *prometheus.CounterVec
	// remote counts remote workers' jobs by worker name and outcome.
	remote *prometheus.CounterVec

	jobs, oldest, busy, workers, leader, up *prometheus.Desc
	paused, held, limit                     *prometheus.Desc // per queue with a state
	keyLimit, keysBlocked, keyHeld          *prometheus.Desc // per keyed queue, per queue and reason
	rate, throttled                         *prometheus.Desc // per throttled queue
	keyRate                                 *prometheus.Desc // per queue with a throttle per key

	pairs  *pairs // the (queue, kind) labels of the counters and histograms
	names  *pairs // the remote workers' names (with kind ""), for remote
	client atomic.Pointer[hopper.Client]
	reg    *prometheus.Registry
}

// New returns the metrics, unregistered but for the registry of Handler.
// Zero or negative bounds in o mean their defaults.
func New(o Options) *Metrics {
	o.StatsMaxAge = cmp.Or(o.StatsMaxAge, DefaultStatsMaxAge)
	o.StatsTimeout = cmp.Or(o.StatsTimeout, DefaultStatsTimeout)
	if o.MaxQueueKinds <= 0 {
		o.MaxQueueKinds = DefaultMaxQueueKinds
	}
	if o.MaxQueues <= 0 {
		o.MaxQueues = DefaultMaxQueues
	}
	if o.MaxRemoteWorkers <= 0 {
		o.MaxRemoteWorkers = DefaultMaxRemoteWorkers
	}
	m := &Metrics{
		o:     o,
		pairs: newPairs(o.MaxQueueKinds),
		names: newPairs(o.MaxRemoteWorkers),
		remote: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hopper_remote_worker_jobs_total",
			Help: "Jobs of remote workers (the HTTP worker protocol) by the worker's registered name and outcome: fetched, completed, failed (to be retried), dead, cancelled, snoozed, interrupted (its lease expired), refused (an outcome refused: its lease was lost).",
		}, []string{"worker", "outcome"}),
		enqueued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hopper_jobs_enqueued_total",
			Help: "Jobs enqueued by this process (by Enqueue, or fired by a schedule).",
		}, []string{"queue", "kind"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hopper_jobs_finished_total",
			Help: "Jobs this process moved to a final state: completed, cancelled or dead.",
		}, []string{"queue", "kind", "state"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hopper_attempt_failures_total",
			Help: "Attempts that failed: reason error (the handler failed, timed out or panicked) or interrupted (its worker died).",
		}, []string{"queue", "kind", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hopper_job_duration_seconds",
			Help:    "How long attempts ran in their handler, by the state they led to.",
			Buckets: JobBuckets,
		}, []string{"queue", "kind", "state"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hopper_job_wait_seconds",
			Help:    "How long jobs waited from ready (their run-at, or their creation if later) to the start of an attempt.",
			Buckets: JobBuckets,
		}, []string{"queue", "kind"}),
		storeDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hopper_store_operation_duration_seconds",
			Help:    "Latency of the store operations the client made, by operation.",
			Buckets: StoreBuckets,
		}, []string{"op"}),
		storeErr: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hopper_store_operation_errors_total",
			Help: "Store operations that returned an error, by operation.",
		}, []string{"op"}),
		jobs: prometheus.NewDesc("hopper_jobs",
			"Jobs in the store by queue and state (at most the stats max age old).", []string{"queue", "state"}, nil),
		oldest: prometheus.NewDesc("hopper_oldest_available_job_age_seconds",
			"How long the most overdue ready (available) job of each queue has waited for a worker; 0 when none is ready.", []string{"queue"}, nil),
		paused: prometheus.NewDesc("hopper_queue_paused",
			"1 for each paused queue (hopper queue pause): no job of it starts in any process; paused queues only.", []string{"queue"}, nil),
		held: prometheus.NewDesc("hopper_queue_held_jobs",
			"Jobs ready to run that wait because their queue is paused, at its concurrency limit or throttled, by queue with a state (at most the stats max age old).", []string{"queue"}, nil),
		limit: prometheus.NewDesc("hopper_queue_concurrency_limit",
			"The concurrency limit of each queue that has one, across every process sharing the store.", []string{"queue"}, nil),
		keyLimit: prometheus.NewDesc("hopper_queue_key_concurrency_limit",
			"The limit per key of each queue that has one, across every process sharing the store.", []string{"queue"}, nil),
		keysBlocked: prometheus.NewDesc("hopper_queue_keys_blocked",
			"Keys whose jobs may not start now, by queue and reason: limit (at the queue's limit per key), paused, held, throttled (by the queue's rate per key).", []string{"queue", "reason"}, nil),
		keyHeld: prometheus.NewDesc("hopper_queue_key_held_jobs",
			"Jobs ready to run that wait because their key is paused, held, at the queue's limit per key or throttled, by queue with a limit or a rate per key (0 while none waits so), or with such jobs.", []string{"queue"}, nil),
		rate: prometheus.NewDesc("hopper_queue_rate_limit",
			"The starts per second each throttled queue allows at its steady rate (hopper queue set --rate), across every process sharing the store.", []string{"queue"}, nil),
		keyRate: prometheus.NewDesc("hopper_queue_key_rate_limit",
			"The starts per second each key of a queue with a rate per key may make at its steady rate (hopper queue set --key-rate), across every process sharing the store.", []string{"queue"}, nil),
		throttled: prometheus.NewDesc("hopper_queue_throttled_jobs",
			"Jobs ready to run that wait because their queue's throttle allows no start now, by throttled queue (at most the stats max age old).", []string{"queue"}, nil),
		busy: prometheus.NewDesc("hopper_workers_busy",
			"Workers of this process running a job now.", nil, nil),
		workers: prometheus.NewDesc("hopper_workers",
			"Workers of this process (Config.Concurrency).", nil, nil),
		leader: prometheus.NewDesc("hopper_leader",
			"1 if this process leads the servers sharing the store (runs the retention cleaner, the schedules and the monitor), else 0.", nil, nil),
		up: prometheus.NewDesc("hopper_stats_up",
			"1 if the store's counts could be read for this scrape, else 0 (the job gauges are then left out).", nil, nil),
		authFailures: newAuthFailures(),
	}
	m.reg = prometheus.NewRegistry()
	m.reg.MustRegister(m, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Attach makes scrapes read c for the gauges. Call it once c exists (its
// Config took m.OnEvent and m.OnStoreCall before); until then the gauges
// are left out. Attaching another client replaces the first.
func (m *Metrics) Attach(c *hopper.Client) { m.client.Store(c) }

// Handler serves the metrics — these, and the Go runtime's and the
// process's — in Prometheus' exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// OnEvent is the client's Config.OnEvent: it counts the transition. It
// is fast and never blocks.
func (m *Metrics) OnEvent(ev hopper.Event) {
	j := ev.Job
	if j == nil {
		return
	}
	switch ev.Type {
	case job.EventEnqueued, job.EventStarted, job.EventRetrying, job.EventRescued,
		job.EventCompleted, job.EventCancelled, job.EventDead:
		m.remoteJob(ev.Type, j)
	case job.EventSnoozed:
		m.remoteJob(ev.Type, j)
		return
	default:
		return // not counted: spare the labels' lookup
	}
	q, k := m.pairs.labels(j.Queue, j.Kind)
	switch ev.Type {
	case job.EventEnqueued:
		m.enqueued.WithLabelValues(q, k).Inc()
	case job.EventStarted:
		ready := j.RunAt
		if j.CreatedAt.After(ready) {
			ready = j.CreatedAt
		}
		if !j.StartedAt.IsZero() {
			m.wait.WithLabelValues(q, k).Observe(max(j.StartedAt.Sub(ready), 0).Seconds())
		}
	case job.EventRetrying:
		m.attemptEnded(j, q, k)
		m.failures.WithLabelValues(q, k, "error").Inc()
	case job.EventRescued:
		m.failures.WithLabelValues(q, k, "interrupted").Inc()
	case job.EventCompleted, job.EventCancelled, job.EventDead:
		state := j.State.String()
		m.finished.WithLabelValues(q, k, state).Inc()
		if a := m.attemptEnded(j, q, k); a != nil && ev.Type == job.EventDead {
			reason := "error"
			if a.Outcome == job.OutcomeInterrupted {
				reason = "interrupted"
			}
			m.failures.WithLabelValues(q, k, reason).Inc()
		}
	}
}

// remoteOutcomes are the outcome labels of hopper_remote_worker_jobs_total
// by the event of the attempt's end, and the outcome its record says.
var remoteOutcomes = map[job.EventType]struct{ label, record string }{
	job.EventCompleted: {"completed", job.StateCompleted.String()},
	job.EventRetrying:  {"failed", job.StateRetrying.String()},
	job.EventDead:      {"dead", job.StateDead.String()},
	job.EventCancelled: {"cancelled", job.StateCancelled.String()},
	job.EventSnoozed:   {"snoozed", job.OutcomeSnoozed},
	job.EventRescued:   {"interrupted", job.OutcomeInterrupted},
}

// remoteJob counts, in hopper_remote_worker_jobs_total, a remote worker's
// fetch of j (started), or the end of its attempt: the event whose job's
// latest attempt record is a remote worker's and says that outcome (not a
// waiting job cancelled, whose latest record is an older attempt's).
func (m *Metrics) remoteJob(t job.EventType, j *hopper.Job) {
	if t == job.EventStarted {
		if strings.HasPrefix(j.Worker, store.RemoteWorkerPrefix) {
			m.remote.WithLabelValues(m.workerLabel(j.Worker), "fetched").Inc()
		}
		return
	}
	o, ok := remoteOutcomes[t]
	if !ok || len(j.Attempts) == 0 {
		return
	}
	a := &j.Attempts[len(j.Attempts)-1]
	if a.Outcome != o.record || !strings.HasPrefix(a.Worker, store.RemoteWorkerPrefix) {
		return
	}
	m.remote.WithLabelValues(m.workerLabel(a.Worker), o.label).Inc()
}

// OnRemoteRefused is the client's Config.Remote.OnRefused: it counts the
// refused outcomes of worker (outcome refused).
func (m *Metrics) OnRemoteRefused(worker string, jobs []hopper.ID) {
	m.remote.WithLabelValues(m.workerLabel(worker), "refused").Add(float64(len(jobs)))
}

// Unnamed is the worker label of a remote worker registered without a
// name.
const Unnamed = "(unnamed)"

// workerLabel is the worker label of the remote worker id: the name it
// registered with (Unnamed if none) while within Options.MaxRemoteWorkers
// names, else Other — Other too for a worker the attached client does not
// know (registered with another server sharing the store, or gone).
func (m *Metrics) workerLabel(id string) string {
	c := m.client.Load()
	if c == nil {
		return Other
	}
	name, ok := c.RemoteWorkerName(id)
	switch {
	case !ok:
		return Other
	case name == "":
		name = Unnamed
	}
	label, _ := m.names.labels(name, "")
	return label
}

// attemptEnded observes, under the labels q and k, the duration of the
// attempt whose end made j's transition, and returns that attempt; nil
// when the transition ended no attempt (a waiting job cancelled, a
// retrying job superseded by its schedule's next tick).
func (m *Metrics) attemptEnded(j *hopper.Job, q, k string) *hopper.Attempt {
	if len(j.Attempts) == 0 {
		return nil
	}
	a := &j.Attempts[len(j.Attempts)-1]
	switch {
	case a.Attempt != j.Attempt:
		return nil
	case a.Outcome == job.OutcomeInterrupted:
		// The rescuer's record: the worker died, no handler time to report.
		if j.State == hopper.StateDead && j.StartedAt.Equal(a.StartedAt) && !j.FinishedAt.IsZero() {
			return a
		}
		return nil
	case a.Outcome != j.State.String():
		return nil
	}
	m.duration.WithLabelValues(q, k, a.Outcome).Observe(a.Duration.Seconds())
	return a
}

// OnStoreCall is the client's Config.OnStoreCall: it records the
// operation's latency and counts its errors. It is fast and never blocks.
func (m *Metrics) OnStoreCall(op string, took time.Duration, err error) {
	m.storeDur.WithLabelValues(op).Observe(took.Seconds())
	if err != nil {
		m.storeErr.WithLabelValues(op).Inc()
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.enqueued.Describe(ch)
	m.finished.Describe(ch)
	m.failures.Describe(ch)
	m.duration.Describe(ch)
	m.wait.Describe(ch)
	m.storeDur.Describe(ch)
	m.storeErr.Describe(ch)
	m.authFailures.Describe(ch)
	m.remote.Describe(ch)
	for _, d := range []*prometheus.Desc{m.jobs, m.oldest, m.up, m.busy, m.workers, m.leader, m.paused, m.held, m.limit,
		m.keyLimit, m.keysBlocked, m.keyHeld, m.rate, m.throttled, m.keyRate} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the counters and histograms,
// and the gauges read from the attached client.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.enqueued.Collect(ch)
	m.finished.Collect(ch)
	m.failures.Collect(ch)
	m.duration.Collect(ch)
	m.wait.Collect(ch)
	m.storeDur.Collect(ch)
	m.storeErr.Collect(ch)
	m.authFailures.Collect(ch)
	m.remote.Collect(ch)
	c := m.client.Load()
	if c == nil {
		return
	}
	if !m.o.NoPool {
		p := c.Pool()
		ch <- prometheus.MustNewConstMetric(m.busy, prometheus.GaugeValue, float64(p.Busy))
		ch <- prometheus.MustNewConstMetric(m.workers, prometheus.GaugeValue, float64(p.Workers))
		leading := 0.0
		if c.Leading() {
			leading = 1
		}
		ch <- prometheus.MustNewConstMetric(m.leader, prometheus.GaugeValue, leading)
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.o.StatsTimeout)
	defer cancel()
	st, err := c.StatsCached(ctx, StatsWindow, m.o.StatsMaxAge)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(m.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(m.up, prometheus.GaugeValue, 1)
	now := time.Now()
	for _, g := range queueGauges(st, m.o.MaxQueues) {
		for _, s := range job.States {
			ch <- prometheus.MustNewConstMetric(m.jobs, prometheus.GaugeValue, float64(g.counts[s]), g.name, s.String())
		}
		age := 0.0
		if !g.oldest.IsZero() {
			age = max(now.Sub(g.oldest), 0).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(m.oldest, prometheus.GaugeValue, age, g.name)
	}
	states, err := c.QueueStates(ctx)
	if err != nil {
		return // the job gauges are out; hopper_stats_up says the counts were read
	}
	m.collectKeys(ctx, c, states, ch)
	m.collectKeyHeld(ctx, c, states, ch)
	for _, q := range states {
		if q.Paused {
			ch <- prometheus.MustNewConstMetric(m.paused, prometheus.GaugeValue, 1, q.Name)
		}
		if q.Concurrency > 0 {
			ch <- prometheus.MustNewConstMetric(m.limit, prometheus.GaugeValue, float64(q.Concurrency), q.Name)
		}
		if q.KeyConcurrency > 0 {
			ch <- prometheus.MustNewConstMetric(m.keyLimit, prometheus.GaugeValue, float64(q.KeyConcurrency), q.Name)
		}
		held, throttled := 0, 0
		if q.Paused || q.AtLimit() || q.IsThrottled() {
			held = st.Queues[q.Name][hopper.StateAvailable]
		}
		if !q.Paused && !q.AtLimit() && q.IsThrottled() {
			throttled = held
		}
		ch <- prometheus.MustNewConstMetric(m.held, prometheus.GaugeValue, float64(held), q.Name)
		if q.Rate.N > 0 {
			perSec := float64(q.Rate.N) / q.Rate.Period.Seconds()
			ch <- prometheus.MustNewConstMetric(m.rate, prometheus.GaugeValue, perSec, q.Name)
			ch <- prometheus.MustNewConstMetric(m.throttled, prometheus.GaugeValue, float64(throttled), q.Name)
		}
		if q.KeyRate.N > 0 {
			perSec := float64(q.KeyRate.N) / q.KeyRate.Period.Seconds()
			ch <- prometheus.MustNewConstMetric(m.keyRate, prometheus.GaugeValue, perSec, q.Name)
		}
	}
}

// collectKeyHeld sends hopper_queue_key_held_jobs: per queue with a limit
// or a rate per key (0 if none), or with jobs its keys hold, the ready jobs
// that their keys hold back (Client.KeyHeld).
func (m *Metrics) collectKeyHeld(ctx context.Context, c *hopper.Client, states []hopper.QueueInfo, ch chan<- prometheus.Metric) {
	held, err := c.KeyHeld(ctx)
	if err != nil {
		return
	}
	for _, q := range states {
		if _, ok := held[q.Name]; !ok && (q.KeyConcurrency > 0 || q.KeyRate.N > 0) {
			held[q.Name] = 0
		}
	}
	for q, n := range held {
		ch <- prometheus.MustNewConstMetric(m.keyHeld, prometheus.GaugeValue, float64(n), q)
	}
}

// collectKeys sends hopper_queue_keys_blocked: the keys with a state (one
// read of the store's small table of them) that may not start a job now,
// counted by queue and reason (store.KeyBlocked).
func (m *Metrics) collectKeys(ctx context.Context, c *hopper.Client, states []hopper.QueueInfo, ch chan<- prometheus.Metric) {
	keys, err := c.Keys(ctx, "")
	if err != nil || len(keys) == 0 {
		return
	}
	limits := make(map[string]int, len(states))
	for _, q := range states {
		limits[q.Name] = q.KeyConcurrency
	}
	type qr struct{ queue, reason string }
	blocked := map[qr]int{}
	now := time.Now()
	for _, k := range keys {
		r := store.KeyBlocked(store.KeyState{Key: k.Key, Running: k.Running, Paused: k.Paused, HeldUntil: k.HeldUntil},
			limits[k.Queue], now)
		if r == "" && k.ThrottledUntil.After(now) {
			r = "throttled"
		}
		if r != "" {
			blocked[qr{k.Queue, r}]++
		}
	}
	for k, n := range blocked {
		ch <- prometheus.MustNewConstMetric(m.keysBlocked, prometheus.GaugeValue, float64(n), k.queue, k.reason)
	}
}
