package hopper_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// catchUpStores are the stores the catch-up tests and the benchmarks of a
// shared queue run on: several clients share one, as processes do.
var catchUpStores = []string{"memory", "sqlite", "postgres"}

// sharedStores opens n stores of one new backend of kind (one memory store
// n times; n opens of a new SQLite file or PostgreSQL schema, as n
// processes would), closed when the test ends.
func sharedStores(t testing.TB, kind string, n int) []store.Store {
	t.Helper()
	out := make([]store.Store, n)
	if kind == "memory" {
		st := memstore.New()
		for i := range out {
			out[i] = st
		}
		return out
	}
	url := sharedStoreURL(t, kind)
	for i := range out {
		st, err := store.Open(context.Background(), url, store.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		out[i] = st
	}
	return out
}

// eachStore runs f as a parallel subtest per store of catchUpStores.
func eachStore(t *testing.T, f func(t *testing.T, kind string)) {
	for _, kind := range catchUpStores {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f(t, kind)
		})
	}
}

// TestScheduleCatchUpPolicies: 3 hours of downtime on an every-minute
// schedule (180 missed ticks) gives 1 run (one, latest), 0 (none) or
// min(180, cap) within the window (all); firing again runs nothing more.
// Three clients (processes) of each store fire at once, twice, at 3h30s
// after the schedule's creation (explicit times: the real clock is not
// used).
func TestScheduleCatchUpPolicies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		o     hopper.ScheduleOptions
		runs  int
		first time.Duration // fire time of the first run, from the start
	}{
		{"one", hopper.ScheduleOptions{}, 1, time.Minute},
		{"none", hopper.ScheduleOptions{CatchUp: hopper.CatchUpNone}, 0, 0},
		{"latest", hopper.ScheduleOptions{CatchUp: hopper.CatchUpLatest}, 1, 180 * time.Minute},
		{"all", hopper.ScheduleOptions{CatchUp: hopper.CatchUpAll, CatchUpMax: 500}, 180, time.Minute},
		{"all over the cap", hopper.ScheduleOptions{CatchUp: hopper.CatchUpAll, CatchUpMax: 50}, 50, 131 * time.Minute},
		{"all by default", hopper.ScheduleOptions{CatchUp: hopper.CatchUpAll}, 100, 81 * time.Minute},
		{"all within a window", hopper.ScheduleOptions{CatchUp: hopper.CatchUpAll, CatchUpWindow: time.Hour, CatchUpMax: 500}, 60, 121 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eachStore(t, func(t *testing.T, kind string) {
				ctx := context.Background()
				ws, _ := ticks(0)
				o := tc.o
				o.Every, o.Kind = time.Minute, "tick"
				clients := make([]*hopper.Client, 3) // three processes sharing the store, none started
				for i, st := range sharedStores(t, kind, len(clients)) {
					c, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws, Logger: quiet})
					if err != nil {
						t.Fatal(err)
					}
					clients[i] = c
				}
				if _, err := clients[0].AddSchedule(ctx, "s", o); err != nil {
					t.Fatal(err)
				}
				sc, err := clients[0].GetSchedule(ctx, "s")
				if err != nil {
					t.Fatal(err)
				}
				start := sc.CreatedAt                          // the anchor as stored: ticks at start + k minutes
				now := start.Add(3*time.Hour + 30*time.Second) // nobody fired: 180 ticks missed
				// The three fire at once, twice: each tick runs once.
				var wg sync.WaitGroup
				for range 2 {
					for _, c := range clients {
						wg.Go(func() { c.FireSchedules(ctx, now) })
					}
				}
				wg.Wait()
				jobs, err := clients[0].List(ctx, hopper.ListOptions{Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				if len(jobs) != tc.runs {
					t.Fatalf("%d runs, want %d", len(jobs), tc.runs)
				}
				seen := map[time.Time]bool{}
				for i, j := range jobs {
					if seen[j.FireTime] {
						t.Errorf("tick %v ran twice", j.FireTime.Sub(start))
					}
					seen[j.FireTime] = true
					if want := start.Add(tc.first + time.Duration(i)*time.Minute); !j.FireTime.Equal(want) {
						t.Errorf("run %d: tick %v, want %v", i, j.FireTime.Sub(start), want.Sub(start))
					}
				}
				if sc, err = clients[0].GetSchedule(ctx, "s"); err != nil {
					t.Fatal(err)
				}
				if want := start.Add(181 * time.Minute); !sc.NextRunAt.Equal(want) {
					t.Errorf("next run %v, want %v", sc.NextRunAt.Sub(start), want.Sub(start))
				}
			})
		})
	}
}

// gatedStore is a store whose first FireSchedule of tick holds: it says so
// on at and goes on once release is closed. The other calls, and later
// ones for tick, pass.
type gatedStore struct {
	store.Store
	tick        time.Time
	held        atomic.Bool
	at, release chan struct{}
}

func (g *gatedStore) FireSchedule(ctx context.Context, p store.FireScheduleParams) (store.FireResult, error) {
	if p.FireTime.Equal(g.tick) && g.held.CompareAndSwap(false, true) {
		close(g.at)
		<-g.release
	}
	return g.Store.FireSchedule(ctx, p)
}

// TestScheduleCatchUpLastTickRace orders the events that lost a tick of
// TestScheduleCatchUpPolicies/all once in CI (179 runs of 180): process A
// catches up 180 missed ticks and has fired 179 of them, and before it
// fires the last one (180m, the only tick left at or before now) process
// B looks at the schedule. To B that tick alone was due, so it fired it
// as an ordinary tick, through the overlap policy, which catch-up all
// does not apply: with skip (the default) the 179 caught-up jobs still
// waiting made it skip the tick, and A's compare-and-set then failed: the
// tick never ran. With cancel it cancelled the 179m run; with buffer one
// it held the tick back until that run finished. Now B fires it as the
// catch-up does, whatever the policy. A leader killed between those two
// ticks leaves the next leader the same state.
//
// latest, and all with a cap of one, ran one tick the same way: A moved
// the schedule's next tick to 180m, then fired it; B, between the two,
// skipped it while the run of 1m (fired before the downtime) still waited.
// Now the move and the firing are one compare-and-set.
func TestScheduleCatchUpLastTickRace(t *testing.T) {
	t.Parallel()
	type tc struct {
		name   string
		o      hopper.ScheduleOptions
		before bool // tick 1m fired (its job waits) before the downtime
		want   []time.Duration
	}
	var all []time.Duration
	for i := range 180 {
		all = append(all, time.Duration(i+1)*time.Minute)
	}
	var cases []tc
	for _, overlap := range []hopper.Overlap{hopper.OverlapSkip, hopper.OverlapCancel, hopper.OverlapBufferOne, hopper.OverlapAllow} {
		cases = append(cases, tc{"all/" + overlap.String(), hopper.ScheduleOptions{CatchUp: hopper.CatchUpAll, CatchUpMax: 500, Overlap: overlap}, false, all})
	}
	cases = append(cases,
		tc{"latest", hopper.ScheduleOptions{CatchUp: hopper.CatchUpLatest}, true, []time.Duration{time.Minute, 180 * time.Minute}},
		tc{"all capped to one", hopper.ScheduleOptions{CatchUp: hopper.CatchUpAll, CatchUpMax: 1}, true, []time.Duration{time.Minute, 180 * time.Minute}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eachStore(t, func(t *testing.T, kind string) {
				ctx := context.Background()
				ws, _ := ticks(0)
				sts := sharedStores(t, kind, 2)
				gate := &gatedStore{Store: sts[0], at: make(chan struct{}), release: make(chan struct{})}
				a, err := hopper.NewClient(hopper.Config{Store: gate, Workers: ws, Logger: quiet})
				if err != nil {
					t.Fatal(err)
				}
				b, err := hopper.NewClient(hopper.Config{Store: sts[1], Workers: ws, Logger: quiet})
				if err != nil {
					t.Fatal(err)
				}
				o := tc.o
				o.Every, o.Kind = time.Minute, "tick"
				if _, err := a.AddSchedule(ctx, "s", o); err != nil {
					t.Fatal(err)
				}
				sc, err := a.GetSchedule(ctx, "s")
				if err != nil {
					t.Fatal(err)
				}
				start := sc.CreatedAt // the anchor as stored
				if tc.before {
					b.FireSchedules(ctx, start.Add(time.Minute+time.Second))
				}
				gate.tick = start.Add(180 * time.Minute)
				now := start.Add(3*time.Hour + 30*time.Second) // the ticks to 180m missed
				done := make(chan struct{})
				go func() {
					defer close(done)
					a.FireSchedules(ctx, now)
				}()
				<-gate.at // A is about to fire 180m
				b.FireSchedules(ctx, now)
				close(gate.release)
				<-done
				jobs, err := a.List(ctx, hopper.ListOptions{Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				var got []time.Duration
				for _, j := range jobs {
					got = append(got, j.FireTime.Sub(start))
					if j.State != hopper.StateAvailable {
						t.Errorf("the run of tick %v is %v, want available", j.FireTime.Sub(start), j.State)
					}
				}
				if !equalDurations(got, tc.want) {
					t.Errorf("%d runs, ticks %v…; want %d, %v…", len(got), got[:min(len(got), 3)], len(tc.want), tc.want[:min(len(tc.want), 3)])
				}
				if sc, err = a.GetSchedule(ctx, "s"); err != nil {
					t.Fatal(err)
				}
				if sc.SkippedTicks != 0 || len(sc.Buffered) != 0 || !sc.NextRunAt.Equal(start.Add(181*time.Minute)) {
					t.Errorf("schedule: %d skipped ticks, %d buffered, next %v; want none, none, 181m",
						sc.SkippedTicks, len(sc.Buffered), sc.NextRunAt.Sub(start))
				}
			})
		})
	}
}

func TestAddScheduleCatchUpRefusesBadInput(t *testing.T) {
	t.Parallel()
	ws, _ := ticks(0)
	c := newClient(t, hopper.Config{Workers: ws})
	for _, tc := range []struct {
		o     hopper.ScheduleOptions
		field string
	}{
		{hopper.ScheduleOptions{Every: time.Minute, CatchUp: 9}, "catch_up"},
		{hopper.ScheduleOptions{Every: time.Minute, FixedDelay: true, CatchUp: hopper.CatchUpAll}, "catch_up"},
		{hopper.ScheduleOptions{Every: time.Minute, CatchUpMax: 5}, "catch_up_max"},
		{hopper.ScheduleOptions{Every: time.Minute, CatchUp: hopper.CatchUpLatest, CatchUpWindow: time.Hour}, "catch_up_window"},
		{hopper.ScheduleOptions{Every: time.Minute, CatchUp: hopper.CatchUpAll, CatchUpWindow: 8 * 24 * time.Hour}, "catch_up_window"},
		{hopper.ScheduleOptions{Every: time.Minute, CatchUp: hopper.CatchUpAll, CatchUpWindow: -time.Hour}, "catch_up_window"},
		{hopper.ScheduleOptions{Every: time.Minute, CatchUp: hopper.CatchUpAll, CatchUpMax: 10_001}, "catch_up_max"},
	} {
		tc.o.Kind = "tick"
		_, err := c.AddSchedule(context.Background(), "s", tc.o)
		var fe *hopper.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%+v: %v, want a FieldError on %s", tc.o, err, tc.field)
		}
	}
	if scs, _ := c.Schedules(context.Background()); len(scs) != 0 {
		t.Errorf("refused schedules stored: %d", len(scs))
	}
}
