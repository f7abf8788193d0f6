package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/jackc/pgx/v5"
)

// Soak benchmarks: a client under a steady, paced load for a long time,
// as `hopper serve` runs it (a pool of 10 connections, default lease and
// rescue) but with 100 workers and a completed-job retention of one
// minute, so that the leader's retention pruning (every minute) and
// vacuum both matter within the run. The server's settings are left as
// they are: the jobs table's own autovacuum settings (the migration's) are
// part of what is measured, and where the server has autovacuum off the
// Store's self-vacuum (vacuum.go) is. Each runs once, whatever b.N, for
// HOPPER_SOAK (default 1m), in a database of its own (freshDatabase), so
// that no other session holds back its vacuum horizon:
//
//	HOPPER_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable HOPPER_SOAK=10m \
//	  go test -run '^$' -bench 'SoakSteady' -benchtime 1x -timeout 30m ./store/pgstore/
//
// Single-job Enqueue calls from soakProducers goroutines follow a token
// schedule (a ticker releases rate × elapsed tokens), and a no-op handler
// works the jobs. Every 30 s a line gives the interval's enqueued/s and
// completed/s (persisted completions), the backlog (jobs enqueued and not
// yet started), the p50/p99 of the client's Claim store calls (the
// OnStoreCall time of the whole round trip, including claims that find
// nothing) and of enqueue→start (from the Enqueue call to the handler),
// the jobs table's pg_total_relation_size, n_dead_tup, the vacuums so far
// (manual and auto), the age of the oldest backend_xmin of the database,
// and the slowest call of each kind of store operation that took 100 ms or
// more (purge is the leader's retention). Add -v to see the lines as they
// come.

const (
	soakProducers = 8
	soakWorkers   = 100
	soakRetention = time.Minute
	soakInterval  = 30 * time.Second
	soakClaimGoal = 20 * time.Millisecond // claim p99 goal with a transaction open
)

// soakDuration is HOPPER_SOAK, default 1m.
func soakDuration(b *testing.B) time.Duration {
	v := os.Getenv("HOPPER_SOAK")
	if v == "" {
		return time.Minute
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("HOPPER_SOAK=%q: want a positive duration such as 10m", v)
	}
	return d
}

// BenchmarkSoakSteady: 2,000 jobs/s for HOPPER_SOAK. It keeps up if the
// backlog stays bounded (near zero); the table stays bounded if its size
// levels off once retention prunes as fast as jobs finish.
func BenchmarkSoakSteady(b *testing.B) {
	s := startSoak(b, 2000)
	s.run(soakDuration(b), "steady")
	s.stop()
	s.report(0, len(s.ticks), "steady", "")
}

// BenchmarkSoakOpenTx: 1,000 jobs/s; after 30 s a side connection opens
// a transaction (REPEATABLE READ, with a transaction ID) and stays idle in
// it for HOPPER_SOAK, which keeps vacuum from removing any row version
// that dies meanwhile; then it commits and the load goes on for
// min(HOPPER_SOAK, 2m). The figures without a prefix are those of the
// held phase (goal: claim p99 ≤ 20 ms); recover-s is the time from the
// commit to the first second with claim p99 within the goal and a backlog
// under 0.1 s of load, dead-halved-s to the first second n_dead_tup is
// half what it was at the commit (the held row versions going, by page
// pruning or vacuum).
func BenchmarkSoakOpenTx(b *testing.B) {
	s := startSoak(b, 1000)
	d := soakDuration(b)
	s.run(soakInterval, "before")
	ctx := context.Background()
	tx, err := connTo(b, s.dbURL).BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		b.Fatal(err)
	}
	var xid int64
	if err := tx.QueryRow(ctx, `SELECT txid_current()`).Scan(&xid); err != nil {
		b.Fatal(err)
	}
	b.Logf("transaction %d open", xid)
	i0 := len(s.ticks)
	s.run(d, "held")
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	committed := s.since()
	b.Logf("transaction %d committed at %s", xid, committed.Round(time.Second))
	i1 := len(s.ticks)
	s.run(min(d, 2*time.Minute), "after")
	s.stop()
	s.report(i0, i1, "held", "")
	s.report(i1, len(s.ticks), "after", "after-")

	recovered, halved := -1.0, -1.0 // -1: not within the run
	dead0 := s.ticks[i1-1].dead
	for _, t := range s.ticks[i1:] {
		if _, p99 := pct(s.claims.window(t.at-time.Second, t.at)); recovered < 0 && p99 <= soakClaimGoal && t.backlog() <= int64(s.rate/10) {
			recovered = (t.at - committed).Seconds()
		}
		if halved < 0 && t.dead <= dead0/2 {
			halved = (t.at - committed).Seconds()
		}
	}
	b.ReportMetric(recovered, "recover-s")
	b.ReportMetric(halved, "dead-halved-s")
}

// soak is a running load and what was measured so far.
type soak struct {
	b      *testing.B
	rate   int
	dbURL  string
	mon    *pgx.Conn // the monitoring queries'
	begin  time.Time
	cancel context.CancelFunc
	wg     sync.WaitGroup

	enq, started, done, errs atomic.Int64
	claims, starts           samples
	slowMu                   sync.Mutex
	slowest                  map[string]time.Duration // the interval's slowest store call of each kind
	ticks                    []tick                   // one a second
	intervals                []interval
}

// tick is the state of the run at one second.
type tick struct {
	at                  time.Duration // since the load began
	enq, started, done  int64         // counts so far
	size, dead, vacuums int64         // jobs: total relation size, n_dead_tup, vacuum_count + autovacuum_count
	xminAge             int64         // age of the oldest backend_xmin in the database
}

func (t tick) backlog() int64 { return max(0, t.enq-t.started) }

// interval is what a 30 s line reports.
type interval struct {
	phase              string
	claimP99, startP99 time.Duration
}

// samples are latencies in the order they ended.
type samples struct {
	mu sync.Mutex
	at []time.Duration // since the load began
	d  []time.Duration
}

func (s *samples) add(begin time.Time, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = append(s.at, time.Since(begin))
	s.d = append(s.d, d)
}

// window returns the latencies that ended in (from, to].
func (s *samples) window(from, to time.Duration) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := sort.Search(len(s.at), func(i int) bool { return s.at[i] > from })
	j := sort.Search(len(s.at), func(i int) bool { return s.at[i] > to })
	return append([]time.Duration(nil), s.d[i:j]...)
}

// startSoak starts a client on a fresh database and rate jobs/s of load.
func startSoak(b *testing.B, rate int) *soak {
	dbURL, _ := freshDatabase(b) // skips without HOPPER_TEST_POSTGRES
	s := &soak{b: b, rate: rate, dbURL: dbURL, mon: connTo(b, dbURL), slowest: map[string]time.Duration{}, begin: time.Now()}
	st := mustOpenDB(b, dbURL, pgstore.Options{PoolSize: pgstore.DefaultPoolSize})
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "soak", func(_ context.Context, args json.RawMessage) (any, error) {
		ns, _ := strconv.ParseInt(string(args), 10, 64)
		s.starts.add(s.begin, time.Duration(time.Now().UnixNano()-ns))
		s.started.Add(1)
		return nil, nil
	}, nil)
	c := startClient(b, hopper.Config{Store: st, Workers: ws, Concurrency: soakWorkers,
		CompletedRetention: soakRetention,
		Logger:             slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		OnEvent: func(e hopper.Event) {
			if e.Type == job.EventCompleted {
				s.done.Add(1)
			}
		},
		OnStoreCall: func(op string, took time.Duration, err error) {
			if op == "claim" {
				s.claims.add(s.begin, took)
			}
			s.slowMu.Lock()
			s.slowest[op] = max(s.slowest[op], took)
			s.slowMu.Unlock()
			if err != nil && !errors.Is(err, context.Canceled) && s.errs.Add(1) <= 3 {
				b.Logf("store %s: %v", op, err)
			}
		}})
	var av string
	if err := s.mon.QueryRow(context.Background(), `SELECT current_setting('autovacuum')`).Scan(&av); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d jobs/s from %d producers, %d workers, retention %s; server autovacuum=%s", rate, soakProducers, soakWorkers, soakRetention, av)

	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	tokens := make(chan struct{}, rate) // at most a second's worth queued
	s.wg.Go(func() {                    // the schedule: rate × elapsed tokens so far
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for sent := 0; ; {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for due := int(time.Since(s.begin).Seconds() * float64(rate)); sent < due; sent++ {
				select {
				case tokens <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
		}
	})
	for range soakProducers {
		s.wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-tokens:
				}
				args := json.RawMessage(strconv.AppendInt(nil, time.Now().UnixNano(), 10))
				if _, err := c.Enqueue(ctx, "soak", args, nil); err != nil {
					if ctx.Err() == nil && s.errs.Add(1) <= 3 {
						b.Logf("Enqueue: %v", err)
					}
					continue
				}
				s.enq.Add(1)
			}
		})
	}
	return s
}

// stop stops the producers (the client stops at cleanup).
func (s *soak) stop() {
	s.cancel()
	s.wg.Wait()
	if n := s.errs.Load(); n > 0 {
		s.b.Errorf("%d failed calls", n)
	}
}

func (s *soak) since() time.Duration { return time.Since(s.begin) }

// run samples every second for d, logging a line every 30 s (and at the end).
func (s *soak) run(d time.Duration, phase string) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	end := s.since() + d
	last := len(s.ticks)
	for s.since() < end {
		<-t.C
		s.sample()
		if len(s.ticks)-last >= int(soakInterval/time.Second) || s.since() >= end {
			s.logInterval(phase, last)
			last = len(s.ticks)
		}
	}
}

func (s *soak) sample() {
	t := tick{at: s.since(), enq: s.enq.Load(), started: s.started.Load(), done: s.done.Load()}
	err := s.mon.QueryRow(context.Background(), `SELECT pg_total_relation_size(relid), n_dead_tup, vacuum_count + autovacuum_count,
			(SELECT coalesce(max(age(backend_xmin)), 0) FROM pg_stat_activity WHERE datname = current_database())
		FROM pg_stat_user_tables WHERE relid = 'hopper.jobs'::regclass`).Scan(&t.size, &t.dead, &t.vacuums, &t.xminAge)
	if err != nil {
		s.b.Fatal(err)
	}
	s.ticks = append(s.ticks, t)
}

// prev returns the tick before ticks[i] (the start for the first).
func (s *soak) prev(i int) tick {
	if i == 0 {
		return tick{}
	}
	return s.ticks[i-1]
}

func (s *soak) logInterval(phase string, first int) {
	p, t := s.prev(first), s.ticks[len(s.ticks)-1]
	secs := (t.at - p.at).Seconds()
	cl, st := s.claims.window(p.at, t.at), s.starts.window(p.at, t.at)
	c50, c99 := pct(cl)
	s50, s99 := pct(st)
	s.intervals = append(s.intervals, interval{phase: phase, claimP99: c99, startP99: s99})
	s.slowMu.Lock()
	slow := ""
	for _, op := range slices.Sorted(maps.Keys(s.slowest)) {
		if d := s.slowest[op]; d >= 100*time.Millisecond {
			slow += " " + op + " " + ms(d)
		}
	}
	clear(s.slowest)
	s.slowMu.Unlock()
	s.b.Logf("%-6s %4.0fs enq/s %5.0f done/s %5.0f backlog %6d | claims %5d p50 %6s p99 %7s | start p50 %6s p99 %7s | size %6.1f MB dead %7d vacuums %3d xmin-age %7d | calls ≥ 100ms, slowest:%s",
		phase, t.at.Seconds(), float64(t.enq-p.enq)/secs, float64(t.done-p.done)/secs, t.backlog(),
		len(cl), ms(c50), ms(c99), ms(s50), ms(s99), mb(t.size), t.dead, t.vacuums, t.xminAge, slow)
}

// report reports the figures of ticks[from:to], those of phase, with
// names prefixed.
func (s *soak) report(from, to int, phase, prefix string) {
	p, first, last := s.prev(from), s.ticks[from], s.ticks[to-1]
	secs := (last.at - p.at).Seconds()
	var maxBacklog, maxSize int64
	for _, t := range s.ticks[from:to] {
		maxBacklog, maxSize = max(maxBacklog, t.backlog()), max(maxSize, t.size)
	}
	_, c99 := pct(s.claims.window(p.at, last.at))
	_, s99 := pct(s.starts.window(p.at, last.at))
	var worstC, worstS time.Duration
	for _, iv := range s.intervals {
		if iv.phase == phase {
			worstC, worstS = max(worstC, iv.claimP99), max(worstS, iv.startP99)
		}
	}
	for _, m := range []struct {
		v    float64
		unit string
	}{
		{float64(last.enq-p.enq) / secs, "enq/s"},
		{float64(last.done-p.done) / secs, "done/s"},
		{float64(maxBacklog), "max-backlog"},
		{float64(last.backlog()), "final-backlog"},
		{mb(first.size), "size-start-MB"},
		{mb(maxSize), "size-max-MB"},
		{mb(last.size), "size-end-MB"},
		{msf(c99), "claim-p99-ms"},
		{msf(worstC), "claim-worst-p99-ms"},
		{msf(s99), "start-p99-ms"},
		{msf(worstS), "start-worst-p99-ms"},
	} {
		s.b.ReportMetric(m.v, prefix+m.unit)
	}
}

// pct returns the p50 and p99 of ds (sorted in place).
func pct(ds []time.Duration) (time.Duration, time.Duration) {
	p50, p99, _ := percentiles(ds)
	return p50, p99
}

func ms(d time.Duration) string   { return strconv.FormatFloat(msf(d), 'f', 1, 64) + "ms" }
func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mb(n int64) float64          { return float64(n) / (1 << 20) }
