package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store/memstore"
)

// sent is a notification a test's NotifyKind handler received, and when.
type sent struct {
	hopper.NotifyArgs
	at time.Time
}

// notifications registers, on ws, a NotifyKind handler recording what it
// is sent, and returns what it recorded so far.
func notifications(ws *hopper.Workers) func() []sent {
	var mu sync.Mutex
	var got []sent
	hopper.Register(ws, hopper.NotifyKind, func(ctx context.Context, a hopper.NotifyArgs) (any, error) {
		mu.Lock()
		got = append(got, sent{a, time.Now()})
		mu.Unlock()
		return nil, nil
	}, nil)
	return func() []sent {
		mu.Lock()
		defer mu.Unlock()
		return append([]sent(nil), got...)
	}
}

// monitored starts a client on a fresh memory store with ws, a channel
// "ops" taking every subject, and the schedule "s" every minute in queue
// cron, firing kind with mon.
func monitored(t *testing.T, ws *hopper.Workers, kind string, every time.Duration, mon *hopper.Monitor, cfg hopper.Config) *hopper.Client {
	t.Helper()
	cfg.Store, cfg.Workers = memstore.New(), ws
	c := silentClient(t, cfg)
	ctx := context.Background()
	if err := c.SetChannel(ctx, hopper.Channel{Name: "ops", Type: job.ChannelWebhook, URL: "http://127.0.0.1:1/hook", All: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: every, Kind: kind, Monitor: mon,
		Options: &hopper.EnqueueOptions{Queue: "cron", MaxAttempts: 1}}); err != nil {
		t.Fatal(err)
	}
	startClient(t, c)
	return c
}

// statuses returns the events and statuses of notifications, in order.
func statuses(ns []sent) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Notification.Event+" "+n.Notification.Status)
	}
	return out
}

func wantStatuses(t *testing.T, ns []sent, want ...string) {
	t.Helper()
	got := statuses(ns)
	if len(got) != len(want) {
		t.Fatalf("notifications: got %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("notifications: got %q, want %q", got, want)
		}
	}
}

// TestMonitorNoFalseAlerts: 10,000 on-time ticks of a schedule watched for
// a start within 1 s, a run within 30 s and 1 failure raise no incident
// and send no notification.
func TestMonitorNoFalseAlerts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		got := notifications(ws)
		var runs atomic.Int64
		hopper.RegisterRaw(ws, "tick", func(ctx context.Context, _ json.RawMessage) (any, error) {
			runs.Add(1)
			time.Sleep(100 * time.Millisecond)
			return nil, nil
		}, nil)
		c := monitored(t, ws, "tick", time.Second, &hopper.Monitor{StartGrace: time.Second, MaxDuration: 30 * time.Second, AlertAfterFailures: 1}, hopper.Config{})
		time.Sleep(10_000*time.Second + 500*time.Millisecond)
		stopGracefully(t, c)
		if n := runs.Load(); n != 10_000 {
			t.Errorf("%d runs, want 10,000", n)
		}
		ins, err := c.Incidents(context.Background(), hopper.IncidentFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ins) != 0 || len(got()) != 0 {
			t.Errorf("%d incidents, %d notifications over 10,000 on-time ticks, want 0: %+v", len(ins), len(got()), ins)
		}
	})
}

// TestMonitorMissedStart: a tick whose job cannot start (its queue is
// paused) opens one missed_start incident at its tick plus the grace —
// whatever the ticks after it — and its "down" notification is delivered
// at once; the job's start resolves it with one "up".
func TestMonitorMissedStart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		start := time.Now()
		ws := hopper.NewWorkers()
		got := notifications(ws)
		hopper.RegisterRaw(ws, "tick", func(ctx context.Context, _ json.RawMessage) (any, error) { return nil, nil }, nil)
		const grace = 20 * time.Second
		c := monitored(t, ws, "tick", time.Minute, &hopper.Monitor{StartGrace: grace}, hopper.Config{})
		if err := c.PauseQueue(ctx, "cron"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Minute) // five ticks, none started
		ns := got()
		wantStatuses(t, ns, "missed_start down")
		tick := start.Add(time.Minute)
		if late := ns[0].at.Sub(tick); late > grace+10*time.Second || late < grace {
			t.Errorf("down notified %v after the tick, want within grace (%v) + 10s", late, grace)
		}
		n := ns[0].Notification
		if n.Schedule != "s" || n.Subject != "schedule:s" || n.Incident == 0 || n.Job == 0 || n.Detail == "" {
			t.Errorf("down notification: got %+v", n)
		}
		open, err := c.Incidents(ctx, hopper.IncidentFilter{Schedule: "s", Open: true})
		if err != nil || len(open) != 1 || open[0].Problem != job.ProblemMissedStart || !open[0].OpenedAt.Equal(tick.Add(grace)) {
			t.Fatalf("open incidents: got %+v, %v; want one missed_start opened at tick+grace", open, err)
		}
		if err := c.ResumeQueue(ctx, "cron"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		wantStatuses(t, got(), "missed_start down", "missed_start up")
		all, _ := c.Incidents(ctx, hopper.IncidentFilter{})
		if len(all) != 1 || all[0].Open() {
			t.Errorf("incidents after the start: got %+v, want the one resolved", all)
		}
		stopGracefully(t, c)
	})
}

// TestMonitorMissedTickNoServer: a tick that no server fired (the only
// process was down) is a missed start too, found when a leader returns.
func TestMonitorMissedTickNoServer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ws := hopper.NewWorkers()
		notifications(ws)
		hopper.RegisterRaw(ws, "tick", func(ctx context.Context, _ json.RawMessage) (any, error) { return nil, nil }, nil)
		st := memstore.New()
		c := silentClient(t, hopper.Config{Store: st, Workers: ws})
		if _, err := c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Minute, Kind: "tick", Monitor: &hopper.Monitor{StartGrace: 5 * time.Second}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Minute) // no client running
		if next := c.CheckMonitors(ctx, time.Now()); !next.IsZero() {
			t.Errorf("CheckMonitors: next %v, want none (the problem holds)", next)
		}
		open, err := c.Incidents(ctx, hopper.IncidentFilter{Open: true})
		if err != nil || len(open) != 1 || open[0].Problem != job.ProblemMissedStart {
			t.Fatalf("open incidents: got %+v, %v; want one missed_start", open, err)
		}
	})
}

// TestMonitorMaxDuration: a run longer than the maximum opens one
// over_duration incident at its start plus the maximum, resolved when it
// ends.
func TestMonitorMaxDuration(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ws := hopper.NewWorkers()
		got := notifications(ws)
		var started atomic.Int64 // fake nanoseconds of the first start
		hopper.RegisterRaw(ws, "slow", func(ctx context.Context, _ json.RawMessage) (any, error) {
			if started.CompareAndSwap(0, time.Now().UnixNano()) {
				time.Sleep(3 * time.Minute)
			}
			return nil, nil
		}, nil)
		c := monitored(t, ws, "slow", time.Hour, &hopper.Monitor{MaxDuration: time.Minute}, hopper.Config{})
		time.Sleep(time.Hour + 2*time.Minute)
		ns := got()
		wantStatuses(t, ns, "over_duration down")
		if late := ns[0].at.Sub(time.Unix(0, started.Load())); late < time.Minute || late > time.Minute+10*time.Second {
			t.Errorf("down notified %v after the start, want within 1m + 10s", late)
		}
		time.Sleep(2 * time.Minute)
		wantStatuses(t, got(), "over_duration down", "over_duration up")
		stopGracefully(t, c)
		_ = ctx
	})
}

// TestMonitorFailures: K = 3 consecutive dead runs open one failing
// incident — not one per failure — and pause the schedule; after a resume
// a completed run resolves it with one "up".
func TestMonitorFailures(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ws := hopper.NewWorkers()
		got := notifications(ws)
		var fail atomic.Bool
		fail.Store(true)
		var runs atomic.Int64
		hopper.RegisterRaw(ws, "flaky", func(ctx context.Context, _ json.RawMessage) (any, error) {
			runs.Add(1)
			if fail.Load() {
				return nil, errors.New("disk full")
			}
			return nil, nil
		}, nil)
		c := monitored(t, ws, "flaky", time.Minute, &hopper.Monitor{AlertAfterFailures: 3, PauseOnFailures: true}, hopper.Config{})
		time.Sleep(2*time.Minute + 30*time.Second) // 2 failures
		if ns := got(); len(ns) != 0 {
			t.Fatalf("after 2 failures: notifications %q, want none", statuses(ns))
		}
		time.Sleep(time.Minute) // the 3rd
		ns := got()
		wantStatuses(t, ns, "failing down")
		sc, err := c.GetSchedule(ctx, "s")
		if err != nil || !sc.Paused {
			t.Fatalf("after 3 failures: schedule %+v, %v; want paused", sc, err)
		}
		time.Sleep(10 * time.Minute) // paused: no more runs, no more notifications
		if n := runs.Load(); n != 3 {
			t.Errorf("%d runs, want 3 (paused after the third)", n)
		}
		wantStatuses(t, got(), "failing down")
		fail.Store(false)
		if err := c.ResumeSchedule(ctx, "s"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(90 * time.Second)
		wantStatuses(t, got(), "failing down", "failing up")
		stopGracefully(t, c)
	})
}

// TestMonitorFailuresWithoutPause: failures keep alerting once while the
// schedule keeps running and failing; no pause without PauseOnFailures.
func TestMonitorFailuresWithoutPause(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		got := notifications(ws)
		hopper.RegisterRaw(ws, "broken", func(ctx context.Context, _ json.RawMessage) (any, error) {
			return nil, errors.New("broken")
		}, nil)
		c := monitored(t, ws, "broken", time.Minute, &hopper.Monitor{AlertAfterFailures: 2}, hopper.Config{})
		time.Sleep(10*time.Minute + 30*time.Second)
		wantStatuses(t, got(), "failing down")
		sc, _ := c.GetSchedule(context.Background(), "s")
		if sc.Paused {
			t.Error("paused without PauseOnFailures")
		}
		stopGracefully(t, c)
	})
}

// TestNotifyDeadJobsAndCatchUpCap: with NotifyDeadJobs a dead job is
// notified once to the channels taking job_dead (not to the others), and
// a catch-up over its cap is notified once.
func TestNotifyDeadJobsAndCatchUpCap(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ws := hopper.NewWorkers()
		got := notifications(ws)
		hopper.RegisterRaw(ws, "doomed", func(ctx context.Context, _ json.RawMessage) (any, error) {
			return nil, hopper.Permanent(errors.New("no such file"))
		}, nil)
		hopper.RegisterRaw(ws, "tick", func(ctx context.Context, _ json.RawMessage) (any, error) { return nil, nil }, nil)
		st := memstore.New()
		c := silentClient(t, hopper.Config{Store: st, Workers: ws, NotifyDeadJobs: true})
		for _, ch := range []hopper.Channel{
			{Name: "dead", Type: job.ChannelSlack, URL: "https://hooks.slack.com/x", All: true, Events: []string{job.NotifyJobDead, job.NotifyCatchUpCap}},
			{Name: "late", Type: job.ChannelSlack, URL: "https://hooks.slack.com/y", All: true, Events: []string{job.NotifyMissedStart}},
		} {
			if err := c.SetChannel(ctx, ch); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.AddSchedule(ctx, "backfill", hopper.ScheduleOptions{Every: time.Minute, Kind: "tick", CatchUp: hopper.CatchUpAll, CatchUpMax: 10}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour) // no server: 60 ticks missed
		startClient(t, c)
		if _, err := c.Enqueue(ctx, "doomed", nil, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		ns := got()
		// The two events are independent: the over-cap notification is
		// stored with the catch-up's first firing, the death's by the
		// outbox, in either order.
		if st := statuses(ns); !slices.Equal(slices.Sorted(slices.Values(st)), []string{"catch_up_over_cap event", "job_dead event"}) {
			t.Fatalf("notifications: got %q, want one catch_up_over_cap and one job_dead event", st)
		}
		for _, n := range ns {
			if n.Channel != "dead" {
				t.Errorf("%s sent to %q, want dead only", n.Notification.Event, n.Channel)
			}
		}
		stopGracefully(t, c)
	})
}
