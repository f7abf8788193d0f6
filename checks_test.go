package hopper_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store/memstore"
)

// checked starts a client on st (a fresh memory store if nil) with ws, a
// channel "ops" taking every subject, and the check "backup" expecting a
// success ping every minute, with a 30 s grace. It returns the client and
// the check's ping ID.
func checked(t *testing.T, ws *hopper.Workers, st *memstore.Store) (*hopper.Client, string) {
	t.Helper()
	if st == nil {
		st = memstore.New()
	}
	c := silentClient(t, hopper.Config{Store: st, Workers: ws})
	ctx := context.Background()
	if err := c.SetChannel(ctx, hopper.Channel{Name: "ops", Type: job.ChannelWebhook, URL: "http://127.0.0.1:1/hook", All: true}); err != nil {
		t.Fatal(err)
	}
	ch, err := c.AddCheck(ctx, "backup", hopper.CheckOptions{Period: time.Minute, Grace: 30 * time.Second})
	if errors.Is(err, hopper.ErrDuplicate) {
		ch, err = c.GetCheck(ctx, "backup")
	}
	if err != nil {
		t.Fatal(err)
	}
	startClient(t, c)
	return c, ch.PingID
}

func ping(t *testing.T, c *hopper.Client, id string, kind job.PingKind, rid string) {
	t.Helper()
	if _, _, err := c.PingCheck(context.Background(), id, hopper.Ping{Kind: kind, RID: rid}); err != nil {
		t.Fatalf("PingCheck(%s): %v", kind, err)
	}
}

// TestCheckDownUp: a new check never goes down; once pinged, a missing
// success ping opens one check_down incident within the grace plus 10 s
// of the ping it missed, however long the outage, and the next success
// ping resolves it with one "up". A failure ping is down at once, a
// second one changes nothing, and a success ends it.
func TestCheckDownUp(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		got := notifications(ws)
		c, id := checked(t, ws, nil)
		time.Sleep(10 * time.Minute) // new: never pinged, never down
		wantStatuses(t, got())
		ping(t, c, id, job.PingSuccess, "")
		due := time.Now().Add(time.Minute)
		time.Sleep(30 * time.Minute) // one outage of 30 missed pings
		ns := got()
		wantStatuses(t, ns, "check_down down")
		if late := ns[0].at.Sub(due); late < 30*time.Second || late > 40*time.Second {
			t.Errorf("down notified %v after the missed ping, want within grace (30s) + 10s", late)
		}
		n := ns[0].Notification
		if n.Check != "backup" || n.Subject != "check:backup" || n.Incident == 0 || n.Detail == "" {
			t.Errorf("down notification: %+v", n)
		}
		ping(t, c, id, job.PingSuccess, "")
		time.Sleep(10 * time.Second)
		wantStatuses(t, got(), "check_down down", "check_down up")

		ping(t, c, id, job.PingFail, "")
		synctest.Wait()
		time.Sleep(time.Second)
		ns = got()
		wantStatuses(t, ns, "check_down down", "check_down up", "check_down down")
		if late := ns[2].at.Sub(time.Now().Add(-time.Second)); late > time.Second {
			t.Errorf("failure notified %v after the ping, want at once", late)
		}
		ping(t, c, id, job.PingFail, "")
		time.Sleep(10 * time.Second)
		ping(t, c, id, job.PingSuccess, "")
		time.Sleep(10 * time.Second)
		wantStatuses(t, got(), "check_down down", "check_down up", "check_down down", "check_down up")
		ins, err := c.Incidents(context.Background(), hopper.IncidentFilter{})
		if err != nil || len(ins) != 2 || ins[0].Open() || ins[1].Open() || ins[0].Problem != job.ProblemCheckDown {
			t.Errorf("incidents: %+v (%v), want 2 check_down, resolved", ins, err)
		}
		if ins, err := c.Incidents(context.Background(), hopper.IncidentFilter{Check: "backup"}); err != nil || len(ins) != 2 {
			t.Errorf("IncidentFilter{Check: backup}: %d (%v), want 2", len(ins), err)
		}
		if ins, err := c.Incidents(context.Background(), hopper.IncidentFilter{Check: "other"}); err != nil || len(ins) != 0 {
			t.Errorf("IncidentFilter{Check: other}: %d (%v), want 0", len(ins), err)
		}
		stopGracefully(t, c)
	})
}

// TestCheckRunNotFinished: a run that pinged start and did not finish
// within the grace is down, even though its success ping is not due yet;
// its finish (same rid) ends it and measures its duration. Concurrent
// runs pair by rid.
func TestCheckRunNotFinished(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		got := notifications(ws)
		c, id := checked(t, ws, nil)
		ctx := context.Background()
		if _, err := c.PauseCheck(ctx, "backup"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ResumeCheck(ctx, "backup"); err != nil {
			t.Fatal(err)
		}
		ping(t, c, id, job.PingSuccess, "")
		time.Sleep(10 * time.Second)
		ping(t, c, id, job.PingStart, "a")
		time.Sleep(10 * time.Second)
		ping(t, c, id, job.PingStart, "b")
		time.Sleep(5 * time.Second)
		ping(t, c, id, job.PingSuccess, "b") // b done in 5s; a still running
		time.Sleep(25 * time.Second)         // a started 40s ago, grace 30s
		ns := got()
		wantStatuses(t, ns, "check_down down")
		if ns[0].Notification.Detail == "" {
			t.Error("no detail")
		}
		ping(t, c, id, job.PingSuccess, "a")
		time.Sleep(10 * time.Second)
		wantStatuses(t, got(), "check_down down", "check_down up")
		pings, err := c.Pings(ctx, "backup", 0)
		if err != nil || len(pings) != 5 {
			t.Fatalf("pings: %v (%v)", pings, err)
		}
		if pings[0].RID != "a" || pings[0].Duration != 40*time.Second || pings[1].RID != "b" || pings[1].Duration != 5*time.Second {
			t.Errorf("durations: a %v, b %v; want 40s, 5s", pings[0].Duration, pings[1].Duration)
		}
		stopGracefully(t, c)
	})
}

// TestCheckOneIncidentThreeProcesses: three started clients sharing a
// store raise one incident, and one down and one up notification, for
// one outage.
func TestCheckOneIncidentThreeProcesses(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		var gots []func() []sent
		var cs []*hopper.Client
		var id string
		for range 3 {
			ws := hopper.NewWorkers()
			gots = append(gots, notifications(ws))
			c, pid := checked(t, ws, st)
			cs, id = append(cs, c), pid
		}
		ping(t, cs[1], id, job.PingSuccess, "")
		time.Sleep(5 * time.Minute)
		ping(t, cs[2], id, job.PingSuccess, "")
		time.Sleep(10 * time.Second)
		var all []sent
		for _, g := range gots {
			all = append(all, g()...)
		}
		slices.SortFunc(all, func(a, b sent) int { return a.at.Compare(b.at) })
		wantStatuses(t, all, "check_down down", "check_down up")
		for _, c := range cs {
			stopGracefully(t, c)
		}
	})
}

// TestCheckUnknownPingID: a ping to an unknown ID is ErrNotFound.
func TestCheckUnknownPingID(t *testing.T) {
	t.Parallel()
	c := silentClient(t, hopper.Config{Store: memstore.New()})
	if _, _, err := c.PingCheck(context.Background(), job.NewPingID(), hopper.Ping{Kind: job.PingSuccess}); !errors.Is(err, hopper.ErrNotFound) {
		t.Errorf("got %v, want ErrNotFound", err)
	}
}

// TestCheckResumedPingWakesMonitor: a resumed check is new again, and its
// first ping gives it a deadline again, which the monitor — asleep for its
// whole poll (5 s) since the resume, the check having none — must keep: a
// check expecting a ping every second with a 1 s grace is down 2 s after
// that ping, not at the monitor's next poll.
func TestCheckResumedPingWakesMonitor(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := silentClient(t, hopper.Config{Store: memstore.New()})
		ch, err := c.AddCheck(ctx, "fast", hopper.CheckOptions{Period: time.Second, Grace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		startClient(t, c)
		ping(t, c, ch.PingID, job.PingSuccess, "")
		if _, err := c.PauseCheck(ctx, "fast"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		if _, err := c.ResumeCheck(ctx, "fast"); err != nil { // the monitor looks, and sleeps its poll
			t.Fatal(err)
		}
		synctest.Wait()
		time.Sleep(time.Second)
		ping(t, c, ch.PingID, job.PingSuccess, "")
		time.Sleep(2*time.Second + 500*time.Millisecond) // down for 0.5 s; the poll ends 1.5 s later
		synctest.Wait()
		ins, err := c.Incidents(ctx, hopper.IncidentFilter{Check: "fast", Open: true})
		if err != nil || len(ins) != 1 {
			t.Errorf("2.5 s after a resumed check's first ping (period 1s, grace 1s): open incidents %+v (%v), want one", ins, err)
		}
		stopGracefully(t, c)
	})
}
