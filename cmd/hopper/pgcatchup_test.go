//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper/internal/pgtest"
)

// alertSink is the webhook of the tests' notification channel: it keeps
// the bodies POSTed to it.
type alertSink struct {
	mu     sync.Mutex
	bodies []string
}

func (a *alertSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.bodies = append(a.bodies, string(b))
	a.mu.Unlock()
}

func (a *alertSink) got() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.bodies...)
}

var notRunRE = regexp.MustCompile(` not_run=(\d+) `)

// TestPostgresCatchUpLeaderKilled: a schedule firing every second with
// catch-up all and a cap has missed more ticks than its cap (its next tick
// set back, as if no server had run for 40 minutes); three hopper serve
// processes on one PostgreSQL schema catch up, and the leader is killed
// with SIGKILL while it does, after a few hundred ticks (twice with
// HOPPER_ACCEPTANCE=full, over 3 hours of missed ticks and a cap of
// 10,000). The next leader goes on from the tick the dead one left, and
// the test checks that every tick from the first within the cap to the
// last caught up fired exactly once (none twice, none lost, each on the
// grid), that the ticks over the cap were not run and counted, once, in
// one catch_up_over_cap event, delivered once to a webhook channel, and
// that only leaders fired. The schedule's jobs are in a queue the servers
// do not work, so each caught-up job still waits when the next tick fires
// (with the skip overlap policy, the state that lost a tick, see
// TestScheduleCatchUpLastTickRace).
func TestPostgresCatchUpLeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it for a while; skipped with -short")
	}
	pgtest.ServerURL(t) // skip (or fail under CI) before building anything
	t.Parallel()
	backlog, limit, kills := 2500, 2000, 1 // seconds missed, the cap, leader kills
	if os.Getenv("HOPPER_ACCEPTANCE") == "full" {
		backlog, limit, kills = 3*3600, 10000, 2
	}
	const (
		workers    = 2
		leaderLoss = 15 * time.Second // promised: a new leader within this
	)
	// Bounds of a failing test: a loaded machine fires some 40 ticks a
	// second on PostgreSQL.
	bound := time.Minute + time.Duration(limit)*25*time.Millisecond
	sink := &alertSink{}
	srv := httptest.NewServer(sink)
	t.Cleanup(srv.Close)
	cl := newPGCluster(t, "--lease", "5s", "--rescue-interval", "500ms", "--queues", "default")
	cl.run("", "schedule", "add", "backlog", "--every", "1s", "--catch-up", "all", "--catch-up-max", strconv.Itoa(limit),
		"--queue", "backlog", "http", "--url", srv.URL+"/tick")
	cl.run("", "schedule", "pause", "backlog")
	cl.run("", "channel", "add", "ops", "--type", "webhook", "--url", srv.URL+"/alert", "--all", "--event", "catch_up_over_cap")
	for range 3 {
		cl.start(workers)
	}
	cl.poll(leaderLoss, "a leader", func() bool { s, _ := cl.liveLeader(); return s != nil })

	// The missed ticks: the next tick set back by backlog seconds (still
	// on the schedule's grid), and the schedule let go, in one write.
	ctx, cancel := context.WithTimeout(context.Background(), 4*bound+time.Minute) // the test's queries, to its end
	defer cancel()
	var first time.Time // the first missed tick
	if err := cl.conn.QueryRow(ctx, `UPDATE `+cl.table("schedules")+` SET paused = false, next_run_at = next_run_at - make_interval(secs => $1)
		WHERE name = 'backlog' RETURNING next_run_at`, float64(backlog)).Scan(&first); err != nil {
		t.Fatal(err)
	}
	fired := func() int { return cl.count(`schedule = 'backlog'`) }
	var victims []*pgServer
	for k := range kills {
		target := (k + 1) * limit / (kills + 4) // a few hundred ticks into the catch-up, then further
		cl.poll(bound, fmt.Sprintf("%d ticks fired", target), func() bool { return fired() >= target })
		leader, term := cl.liveLeader()
		if leader == nil {
			t.Fatalf("kill %d: no live leader (term %d)", k+1, term)
		}
		at := time.Now()
		cl.kill(leader)
		victims = append(victims, leader)
		n := fired()
		if n >= limit {
			t.Fatalf("kill %d came after the catch-up (%d ticks fired, cap %d): nothing to check", k+1, n, limit)
		}
		heir, nterm, took := cl.waitNewLeader(leader.id, term, at, leaderLoss)
		t.Logf("kill %d: %s, the leader (term %d), after %d ticks fired; %s leads in term %d after %s",
			k+1, leader, term, n, heir, nterm, took.Round(time.Millisecond))
		leads := lineTime(heir.log.waitLine(t, 10*time.Second, `msg="leading maintenance"`, fmt.Sprintf("term=%d ", nterm)))
		heir.waitLines(t, time.Minute, 1, leads, `msg="schedule catching up missed ticks"`, "schedule=backlog")
	}
	// Caught up: the next tick is in the future (the ticks after the
	// catch-up are skipped: its jobs still wait).
	cl.poll(bound, "the catch-up to end", func() bool {
		var ahead bool
		err := cl.conn.QueryRow(ctx, `SELECT next_run_at > clock_timestamp() FROM `+cl.table("schedules")+` WHERE name = 'backlog'`).Scan(&ahead)
		return err == nil && ahead
	})
	cl.run("", "schedule", "pause", "backlog")

	// The ticks over the cap: counted once, by the first leader.
	var overCap []string
	for _, s := range cl.servers {
		for _, l := range s.log.all() {
			if strings.Contains(l, `msg="schedule catch-up over its cap`) {
				overCap = append(overCap, l)
			}
		}
	}
	if len(overCap) != 1 {
		t.Fatalf("%d catch-up over its cap lines, want 1: %q", len(overCap), overCap)
	}
	m := notRunRE.FindStringSubmatch(overCap[0])
	if m == nil {
		t.Fatalf("no not_run count in %q", overCap[0])
	}
	dropped, _ := strconv.Atoi(m[1])
	if dropped < backlog-limit {
		t.Errorf("%d ticks over the cap, want at least %d (%d missed, cap %d)", dropped, backlog-limit, backlog, limit)
	}

	// Every tick from the first within the cap to the last fired once.
	rows, err := cl.conn.Query(ctx, `SELECT fire_time FROM `+cl.table("jobs")+` WHERE schedule = 'backlog' ORDER BY fire_time, id`)
	if err != nil {
		t.Fatal(err)
	}
	var ticks []time.Time
	for rows.Next() {
		var ft time.Time
		if err := rows.Scan(&ft); err != nil {
			t.Fatal(err)
		}
		ticks = append(ticks, ft)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ticks) < limit {
		t.Fatalf("%d ticks fired, fewer than the cap %d", len(ticks), limit)
	}
	if want := first.Add(time.Duration(dropped) * time.Second); !ticks[0].Equal(want) {
		t.Errorf("first tick run %s, want %s: the first missed tick %s and %d over the cap", ticks[0], want, first, dropped)
	}
	lost, twice := 0, 0
	for i := 1; i < len(ticks); i++ {
		switch d := ticks[i].Sub(ticks[i-1]); {
		case d == 0:
			twice++
			t.Errorf("tick %s fired twice", ticks[i])
		case d != time.Second:
			lost += int(d/time.Second) - 1
			t.Errorf("ticks lost between %s and %s", ticks[i-1], ticks[i])
		}
	}
	// A killed leader may die between a firing's commit and its log line.
	if n := cl.checkLeaderActions(); n > len(ticks) || n < len(ticks)-kills {
		t.Errorf("the servers' logs say %d firings, the jobs %d", n, len(ticks))
	}

	// One event, one notification job, delivered once (or once an
	// attempt, if a kill interrupted one).
	if n := cl.count(`kind = 'hopper.notify'`); n != 1 {
		t.Fatalf("%d notification jobs, want 1", n)
	}
	cl.poll(time.Minute, "the notification job to complete", func() bool { return cl.count(`kind = 'hopper.notify' AND state = 'completed'`) == 1 })
	var attempts int
	if err := cl.conn.QueryRow(ctx, `SELECT attempt FROM `+cl.table("jobs")+` WHERE kind = 'hopper.notify'`).Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	alerts := sink.got()
	if len(alerts) == 0 || len(alerts) > attempts {
		t.Fatalf("%d alerts for %d attempts, want 1: %q", len(alerts), attempts, alerts)
	}
	var n struct{ Event, Schedule, Detail string }
	if err := json.Unmarshal([]byte(alerts[0]), &n); err != nil || n.Event != "catch_up_over_cap" || n.Schedule != "backlog" ||
		!strings.Contains(n.Detail, fmt.Sprintf("latest %d missed ticks; %d older", limit, dropped)) {
		t.Errorf("alert %q (%v): want catch_up_over_cap of backlog, %d run and %d not", alerts[0], err, limit, dropped)
	}
	t.Logf("%d ticks due (%s to %s), %d over the cap of %d not run; %d caught up by %d leaders (killed: %v): none twice (%d), none lost (%d)",
		dropped+len(ticks), first.Format(time.TimeOnly), ticks[len(ticks)-1].Format(time.TimeOnly), dropped, limit, len(ticks),
		kills+1, victims, twice, lost)
	cl.stopAll()
}
