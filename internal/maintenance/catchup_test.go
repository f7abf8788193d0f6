package maintenance

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

var errDied = errors.New("process died")

// dyingStore is the store of a process that dies right after its first
// FireSchedule that changed a schedule committed: every later call this
// test reaches fails.
type dyingStore struct {
	store.Store
	dead atomic.Bool
}

func (d *dyingStore) FireSchedule(ctx context.Context, p store.FireScheduleParams) (store.FireResult, error) {
	if d.dead.Load() {
		return store.FireResult{}, errDied
	}
	r, err := d.Store.FireSchedule(ctx, p)
	if err == nil && r != (store.FireResult{}) {
		d.dead.Store(true)
	}
	return r, err
}

func (d *dyingStore) Enqueue(ctx context.Context, p store.EnqueueParams) ([]store.EnqueueResult, error) {
	if d.dead.Load() {
		return nil, errDied
	}
	return d.Store.Enqueue(ctx, p)
}

func (d *dyingStore) ListChannels(ctx context.Context) ([]*job.Channel, error) {
	if d.dead.Load() {
		return nil, errDied
	}
	return d.Store.ListChannels(ctx)
}

// notifyConfig is testConfig with notification jobs of kind "notify".
func notifyConfig(st store.Store) Config {
	cfg := testConfig(st)
	cfg.NotifyKind = "notify"
	cfg.NotifyJob = func(channel string, n *job.Notification, now time.Time) (*job.Job, error) {
		args, err := json.Marshal(map[string]string{"channel": channel, "event": n.Event})
		if err != nil {
			return nil, err
		}
		j := &job.Job{Kind: "notify", Queue: job.DefaultQueue, MaxAttempts: 3, Args: args}
		return j, j.Validate(now)
	}
	return cfg
}

// TestCatchUpCapNotifiedWithTheFirstFiring: a catch-up over its cap whose
// process dies right after its first firing committed has stored its
// catch_up_over_cap notification with that firing; the next leader fires
// the other ticks and notifies nothing more: the alert exists once.
func TestCatchUpCapNotifiedWithTheFirstFiring(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New()
	if err := st.PutChannel(ctx, &job.Channel{Name: "ops", Type: job.ChannelSlack, URL: "https://hooks.slack.com/x",
		All: true, Events: []string{job.NotifyCatchUpCap}}); err != nil {
		t.Fatal(err)
	}
	addSchedule(t, st, &job.Schedule{Name: "backlog", Spec: "@every 1m", Kind: "tick", CatchUp: job.CatchUpAll, CatchUpMax: 3})
	now := t0.Add(10*time.Minute + 30*time.Second) // 10 ticks missed, 3 to run
	dying := &dyingStore{Store: st}
	New(notifyConfig(dying)).FireDue(ctx, now)
	if !dying.dead.Load() {
		t.Fatal("the first process never fired")
	}
	New(notifyConfig(st)).FireDue(ctx, now.Add(time.Second)) // the next leader
	js, err := st.List(ctx, store.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ticks []time.Time
	notes := 0
	for _, j := range js {
		switch j.Kind {
		case "tick":
			ticks = append(ticks, j.FireTime)
		case "notify":
			notes++
			var a map[string]string
			if err := json.Unmarshal(j.Args, &a); err != nil || a["event"] != job.NotifyCatchUpCap || a["channel"] != "ops" {
				t.Errorf("notification job args %s (%v): want catch_up_over_cap to ops", j.Args, err)
			}
		}
	}
	if notes != 1 {
		t.Errorf("catch_up_over_cap notification jobs: got %d, want exactly 1", notes)
	}
	if len(ticks) != 3 {
		t.Errorf("ticks fired: got %v, want the latest 3", ticks)
	}
}
