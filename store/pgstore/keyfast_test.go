package pgstore_test

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/hopperq/hopper/store/storetest"
)

// TestKeyedFastMatchesWalk: the keyed claim in one round trip
// (sqlKeyedFast) claims exactly what the walk (store.KeyWalk) picks
// whenever the walk is plain, and claims nothing otherwise. Each round
// makes a random keyed queue — a limit per key of 1 to 3, sometimes a
// concurrency limit, a rate of its own or a rate per key, keys with jobs
// of two kinds and priorities, jobs without a key, paused and held keys,
// slots taken by earlier claims and a cursor they moved or one set — and reads both
// picks, each in a transaction rolled back, for claims of random size and
// kinds.
func TestKeyedFastMatchesWalk(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, pgstore.Options{})
	c := conn(t)
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	plain, notPlain := 0, 0
	for round := range 150 {
		queue := fmt.Sprintf("r%d", round)
		lim := 1 + rng.IntN(3)
		set := store.SetQueueParams{Now: t0, Name: queue, KeyConcurrency: &lim}
		switch rng.IntN(8) {
		case 0:
			conc := 1 + rng.IntN(8)
			set.Concurrency = &conc
		case 1:
			set.Rate = &store.Rate{N: 100, Period: time.Second, Burst: 10}
		case 2:
			set.KeyRate = &store.Rate{N: 1, Period: time.Second, Burst: 1}
		}
		if _, err := s.SetQueue(ctx, set); err != nil {
			t.Fatal(err)
		}
		keys := 1 + rng.IntN(14)
		var jobs []*job.Job
		for range 5 + rng.IntN(40) {
			key := ""
			if rng.IntN(10) > 0 {
				key = fmt.Sprintf("k%02d", rng.IntN(keys))
			}
			j := storetest.KeyedJob(t, queue, key)
			j.Kind = []string{"a", "b"}[rng.IntN(2)]
			j.Priority = rng.IntN(3)
			jobs = append(jobs, j)
		}
		enqueue(t, s, jobs...)
		for k := range keys {
			key := fmt.Sprintf("k%02d", k)
			switch rng.IntN(12) {
			case 0:
				paused := true
				if _, err := s.SetKey(ctx, store.SetKeyParams{Now: t0, Queue: queue, Key: key, Paused: &paused}); err != nil {
					t.Fatal(err)
				}
			case 1:
				until := t0.Add(time.Hour)
				if _, err := s.SetKey(ctx, store.SetKeyParams{Now: t0, Queue: queue, Key: key, HoldUntil: &until}); err != nil {
					t.Fatal(err)
				}
			}
		}
		setCursor := func() {
			cursor := []string{"", fmt.Sprintf("k%02d", rng.IntN(keys))}[rng.IntN(2)]
			if _, err := c.Exec(ctx, `UPDATE `+s.Schema()+`.queues SET key_cursor = $2 WHERE name = $1`, queue, cursor); err != nil {
				t.Fatal(err)
			}
		}
		for range rng.IntN(4) { // slots taken, the cursor moved
			if rng.IntN(2) == 0 {
				setCursor()
			}
			if _, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 1 + rng.IntN(4), Worker: "w",
				LeaseUntil: t0.Add(time.Hour), Queues: []string{queue}}); err != nil {
				t.Fatal(err)
			}
		}
		if rng.IntN(2) == 0 {
			setCursor()
		}
		for range 4 {
			p := store.ClaimParams{Now: t0.Add(time.Second), Limit: 1 + rng.IntN(6), Worker: "w2",
				LeaseUntil: t0.Add(time.Hour), Queues: []string{queue}}
			if rng.IntN(3) == 0 {
				p.Kinds = []string{"a"}
			}
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, held, err := pgstore.FastPick(ctx, s, tx, p, queue)
			if err != nil {
				t.Fatal(err)
			}
			var cursor string
			if err := tx.QueryRow(ctx, `SELECT key_cursor FROM `+s.Schema()+`.queues WHERE name = $1`, queue).Scan(&cursor); err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			tx, err = c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pick, isPlain, err := pgstore.WalkPick(ctx, s, tx, p, queue)
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			ids := make([]job.ID, len(got))
			for i, j := range got {
				ids[i] = j.ID
				if j.State != job.StateRunning || j.Worker != "w2" {
					t.Fatalf("round %d: job %d claimed as %s by %q", round, j.ID, j.State, j.Worker)
				}
			}
			what := fmt.Sprintf("round %d (limit %d, %+v, claim of %d, kinds %v)", round, lim, set, p.Limit, p.Kinds)
			if !isPlain {
				notPlain++
				if len(got) > 0 {
					t.Fatalf("%s: the walk is not plain (%v, keys %v), yet one round trip claimed %v", what, pick.IDs, pick.Keys, ids)
				}
				continue
			}
			plain++
			if !slices.Equal(ids, pick.IDs) || held != pick.Held || cursor != pick.Last {
				t.Fatalf("%s: one round trip claimed %v (held %v, cursor %q); the walk picks %v of keys %v (held %v, last %q)",
					what, ids, held, cursor, pick.IDs, pick.Keys, pick.Held, pick.Last)
			}
		}
	}
	if plain < 20 || notPlain < 20 {
		t.Fatalf("%d plain walks and %d others: the rounds should hold many of each", plain, notPlain)
	}
	t.Logf("%d plain walks, %d others", plain, notPlain)
}

// TestKeyedFastHeld: a claim in one round trip reports jobs held back as
// the walk does: by a key at its limit before the last key it picks, and
// not by one after it, which the walk never comes to.
func TestKeyedFastHeld(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, pgstore.Options{})
	c := conn(t)
	one := 1
	if _, err := s.SetQueue(ctx, store.SetQueueParams{Now: t0, Name: "q", KeyConcurrency: &one}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a", "a", "b", "b", "c", "c"} {
		enqueue(t, s, keyedJob(t, key))
	}
	claim := func(cursor string, n int) ([]string, bool) {
		t.Helper()
		if _, err := c.Exec(ctx, `UPDATE `+s.Schema()+`.queues SET key_cursor = $1 WHERE name = 'q'`, cursor); err != nil {
			t.Fatal(err)
		}
		before := pgstore.FastClaims(s)
		res, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: n, Worker: "w", LeaseUntil: t0.Add(time.Hour), Queues: []string{"q"}})
		if err != nil {
			t.Fatal(err)
		}
		if pgstore.FastClaims(s) != before+1 {
			t.Fatalf("the claim after %q did not go in one round trip", cursor)
		}
		var keys []string
		for _, j := range res.Jobs {
			keys = append(keys, j.Key)
		}
		return keys, res.Held
	}
	if keys, held := claim("a", 1); !slices.Equal(keys, []string{"b"}) || held {
		t.Fatalf("claim after a: keys %v, held %v; want [b], false", keys, held)
	}
	// b is at its limit, after a: the walk from "" stops at a.
	if keys, held := claim("", 1); !slices.Equal(keys, []string{"a"}) || held {
		t.Fatalf("claim after \"\": keys %v, held %v; want [a], false (b comes after the last key picked)", keys, held)
	}
	// a and b at their limit, before c.
	if keys, held := claim("", 1); !slices.Equal(keys, []string{"c"}) || !held {
		t.Fatalf("claim after \"\": keys %v, held %v; want [c], true (a and b at their limit before it)", keys, held)
	}
}

// TestKeyedFastHint: a Store tries a keyed claim in one round trip while
// the queue's last keyed claim could have gone so. A claim that finds the
// walk not plain (the queue's one key at its limit) claims the walk's way;
// the next claims do not try, until one whose walk is plain; a claim that
// goes on from a guess (keyahead.go) goes in one round trip too.
func TestKeyedFastHint(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	setKeyLimit(t, s, "q", 1)
	enqueue(t, s, jobsOf(t, "q", "h", "h", "h")...)
	counts := func(step string, fast, misses, ahead int64) {
		t.Helper()
		if f, m, a := pgstore.FastClaims(s), pgstore.FastMisses(s), pgstore.AheadClaims(s); f != fast || m != misses || a != ahead {
			t.Fatalf("%s: %d claims in one round trip, %d misses, %d ahead; want %d, %d, %d", step, f, m, a, fast, misses, ahead)
		}
	}
	if got, want := claimIn(t, s, 2, "q"), []string{"q/h"}; !slices.Equal(got, want) {
		t.Fatalf("first claim: %q, want %q", got, want)
	}
	counts("first claim (not plain: one key for two)", 0, 1, 0)
	if got := claimIn(t, s, 1, "q"); len(got) != 0 {
		t.Fatalf("h at its limit: claimed %q", got)
	}
	counts("h at its limit: not tried", 0, 1, 1)
	enqueue(t, s, jobsOf(t, "q", "x", "y")...)
	if got, want := claimIn(t, s, 1, "q"), []string{"q/x"}; !slices.Equal(got, want) {
		t.Fatalf("claim of x: %q, want %q", got, want)
	}
	counts("a plain walk", 0, 1, 2)
	if got, want := claimIn(t, s, 1, "q"), []string{"q/y"}; !slices.Equal(got, want) {
		t.Fatalf("claim of y: %q, want %q", got, want)
	}
	counts("tried again, ahead", 1, 1, 3)
	queueRowFree(t, s, "q")
}

// TestPlanKeyedFast: the keyed claim in one round trip reads its keys as
// the walk's run does (TestPlanKeyBatch), through jobs_key, in a generic
// plan as in a custom one, on 100,000 available jobs, half of them of a
// hot key at its limit, and 10,000 key rows; and it takes the jobs it
// picked by primary key.
func TestPlanKeyedFast(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	ctx := t.Context()
	c := conn(t)
	setKeyLimit(t, s, "q", 2)
	keyBacklog(t, s, c, 2)
	st := pgstore.Statements(s)
	if _, err := c.Exec(ctx, `PREPARE kf(text, int, int, timestamptz, text[], text, timestamptz) AS `+st["keyedfast"]); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		for _, cursor := range []string{"", "k00100"} { // the hot key first, then past it
			if _, err := c.Exec(ctx, `UPDATE `+s.Schema()+`.queues SET key_cursor = $1 WHERE name = 'q'`, cursor); err != nil {
				t.Fatal(err)
			}
			plan := explainMode(t, c, st["claimplan"], mode, "ANALYZE, COSTS OFF, BUFFERS", "kf($1, $2, $3, $4, $5, $6, $7)",
				"q", 4, 8, t0, []string{"k"}, "w", t0.Add(time.Hour))
			what := fmt.Sprintf("%s after %q", mode, cursor)
			checkKeyPlan(t, what, plan, 500)
			if !strings.Contains(plan, "Index Scan using jobs_pkey on jobs j") || !strings.Contains(plan, "Update on jobs j (actual time=") ||
				!regexp.MustCompile(`Update on jobs j \(actual time=[0-9.]+ rows=4 `).MatchString(plan) {
				t.Errorf("%s: the plan does not claim 4 jobs by primary key:\n%s", what, plan)
			}
		}
	}
}

// TestKeyedFastCollectsIdleKeys: the claim in one round trip deletes the
// queue's idle key rows (passed holds) as the walk's housekeeping does,
// and counts the slots of the keys it picks whose rows were idle too.
func TestKeyedFastCollectsIdleKeys(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, pgstore.Options{})
	setKeyLimit(t, s, "q", 1)
	enqueue(t, s, jobsOf(t, "q", "a", "b")...)
	until := t0.Add(time.Second)
	for _, key := range []string{"a", "b", "c"} {
		if _, err := s.SetKey(ctx, store.SetKeyParams{Now: t0, Queue: "q", Key: key, HoldUntil: &until}); err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(2 * time.Second)
	res, err := s.Claim(ctx, store.ClaimParams{Now: now, Limit: 2, Worker: "w", LeaseUntil: now.Add(time.Hour), Queues: []string{"q"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 2 || pgstore.FastClaims(s) != 1 {
		t.Fatalf("claimed %d jobs, %d in one round trip; want 2, 1", len(res.Jobs), pgstore.FastClaims(s))
	}
	ks, err := s.ListKeys(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range ks {
		got = append(got, fmt.Sprintf("%s:%d", k.Key, k.Running))
	}
	if want := []string{"a:1", "b:1"}; !slices.Equal(got, want) {
		t.Fatalf("key rows %v, want %v (c's passed hold collected)", got, want)
	}
}
