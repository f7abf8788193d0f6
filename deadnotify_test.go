package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// deadChannels are two channels taking dead jobs and one that does not.
var deadChannels = []hopper.Channel{
	{Name: "dead1", Type: job.ChannelSlack, URL: "https://hooks.slack.com/a", All: true, Events: []string{job.NotifyJobDead}},
	{Name: "dead2", Type: job.ChannelWebhook, URL: "https://example.com/hook", All: true},
	{Name: "late", Type: job.ChannelSlack, URL: "https://hooks.slack.com/b", All: true, Events: []string{job.NotifyMissedStart}},
}

// doomedWorkers returns workers with the kind "doomed", which fails
// permanently.
func doomedWorkers() *hopper.Workers {
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "doomed", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return nil, hopper.Permanent(errors.New("no such file"))
	}, nil)
	return ws
}

// deathNotifiers starts n clients on st with NotifyDeadJobs, each with a
// NotifyKind handler, and returns them and what they were sent, all
// together.
func deathNotifiers(t *testing.T, st store.Store, n int) ([]*hopper.Client, func() []sent) {
	var gots []func() []sent
	var cs []*hopper.Client
	for range n {
		ws := doomedWorkers()
		gots = append(gots, notifications(ws))
		c := silentClient(t, hopper.Config{Store: st, Workers: ws, NotifyDeadJobs: true})
		startClient(t, c)
		t.Cleanup(func() { stopGracefully(t, c) })
		cs = append(cs, c)
	}
	return cs, func() []sent {
		var all []sent
		for _, got := range gots {
			all = append(all, got()...)
		}
		return all
	}
}

// wantOnePerDeadChannel fails unless ns are one job_dead notification of
// job id to each of dead1 and dead2.
func wantOnePerDeadChannel(t *testing.T, ns []sent, id hopper.ID) {
	t.Helper()
	var chans []string
	for _, n := range ns {
		if n.Notification.Event != job.NotifyJobDead || n.Notification.Job != id {
			t.Errorf("notification %+v, want job_dead of job %d", n.Notification, id)
		}
		chans = append(chans, n.Channel)
	}
	slices.Sort(chans)
	if want := []string{"dead1", "dead2"}; !slices.Equal(chans, want) {
		t.Errorf("dead-job notifications sent to %q, want one to each of %q", chans, want)
	}
}

// TestNotifyDeadAfterCrash: a job dead in the store whose notifications
// were never enqueued — its process killed between the death and their
// enqueue, here a client without NotifyDeadJobs — is notified when clients
// with NotifyDeadJobs start: once to each channel taking job_dead, though
// two clients look for it at once.
func TestNotifyDeadAfterCrash(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memstore.New()
		a := silentClient(t, hopper.Config{Store: st, Workers: doomedWorkers()})
		for _, ch := range deadChannels {
			if err := a.SetChannel(ctx, ch); err != nil {
				t.Fatal(err)
			}
		}
		startClient(t, a)
		r, err := a.Enqueue(ctx, "doomed", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if j := waitDone(t, a, r.ID); j.State != hopper.StateDead {
			t.Fatalf("job %d: got %s, want dead", r.ID, j.State)
		}
		stopGracefully(t, a)
		if js, _ := st.List(ctx, store.ListParams{Kind: hopper.NotifyKind}); len(js) != 0 {
			t.Fatalf("the crash point: %d notification jobs, want none", len(js))
		}

		_, got := deathNotifiers(t, st, 2)
		time.Sleep(time.Second)
		synctest.Wait()
		wantOnePerDeadChannel(t, got(), r.ID)
		time.Sleep(time.Minute) // the notifiers' polls find nothing more
		synctest.Wait()
		wantOnePerDeadChannel(t, got(), r.ID)
	})
}

// TestNotifyDeadOnce: a job dying in one of two clients with
// NotifyDeadJobs is notified once to each channel taking job_dead, within
// a second.
func TestNotifyDeadOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memstore.New()
		cs, got := deathNotifiers(t, st, 2)
		for _, ch := range deadChannels {
			if err := cs[0].SetChannel(ctx, ch); err != nil {
				t.Fatal(err)
			}
		}
		r, err := cs[0].Enqueue(ctx, "doomed", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		wantOnePerDeadChannel(t, got(), r.ID)
		time.Sleep(time.Minute)
		synctest.Wait()
		wantOnePerDeadChannel(t, got(), r.ID)
	})
}
