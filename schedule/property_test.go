package schedule

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"
)

// randItem returns a random list item for a field with bounds b.
func randItem(rng *rand.Rand, b bounds, lowBias bool) string {
	span := b.max - b.min + 1
	val := func() int {
		if lowBias && rng.IntN(2) == 0 {
			return b.min + rng.IntN(min(span, 5))
		}
		return b.min + rng.IntN(span)
	}
	name := func(v int) string {
		for k, n := range b.names {
			if n == v && rng.IntN(2) == 0 {
				return strings.ToLower(k)
			}
		}
		return fmt.Sprint(v)
	}
	switch rng.IntN(6) {
	case 0:
		return fmt.Sprintf("*/%d", 1+rng.IntN(b.max))
	case 1:
		return name(val())
	case 2, 3:
		a, z := val(), val()
		if a > z {
			a, z = z, a
		}
		if rng.IntN(2) == 0 {
			return fmt.Sprintf("%s-%s/%d", name(a), name(z), 1+rng.IntN(b.max))
		}
		return name(a) + "-" + name(z)
	case 4:
		return fmt.Sprintf("%s/%d", name(val()), 1+rng.IntN(b.max))
	default:
		return "*"
	}
}

// randSpec returns a random valid cron spec with 5 or 6 fields.
func randSpec(rng *rand.Rand) string {
	all := []bounds{secondBounds, minuteBounds, hourBounds, domBounds, monthBounds, dowBounds}
	if rng.IntN(2) == 0 {
		all = all[1:]
	}
	fields := make([]string, len(all))
	for i, b := range all {
		if rng.IntN(3) == 0 || (b.name == "month" && rng.IntN(2) == 0) {
			fields[i] = "*"
			continue
		}
		items := make([]string, 1+rng.IntN(2))
		for j := range items {
			items[j] = randItem(rng, b, b.name == "hour")
		}
		fields[i] = strings.Join(items, ",")
	}
	return strings.Join(fields, " ")
}

// firstOccurrence reports whether no earlier instant shows the same wall
// clock as tm (which is in the rule's location).
func firstOccurrence(tm time.Time) bool {
	_, off := tm.Zone()
	for back := 15 * time.Minute; back <= 3*time.Hour; back += 15 * time.Minute {
		_, o := tm.Add(-back).Zone()
		if o > off {
			j := tm.Add(time.Duration(off-o) * time.Second)
			if _, oj := j.Zone(); oj == o {
				return false
			}
		}
	}
	return true
}

// firesAt is the oracle: the semantic definition of whether instant i (on
// the step grid) is a fire time of c.
func firesAt(c *cronRule, i time.Time, step time.Duration) bool {
	li := i.In(c.loc)
	if matchesWall(c, li) && firstOccurrence(li) {
		return true
	}
	_, offBefore := i.Add(-time.Second).In(c.loc).Zone()
	_, off := li.Zone()
	if offBefore < off { // i ends a gap: wall clocks [i+offBefore, i+off) were skipped
		end := time.Unix(i.Unix()+int64(off), 0).UTC()
		for w := time.Unix(i.Unix()+int64(offBefore), 0).UTC(); w.Before(end); w = w.Add(step) {
			if matchesWall(c, w) {
				return true
			}
		}
	}
	return false
}

// oracle returns the fire times of c in (from, to] by brute force.
func oracle(c *cronRule, from, to time.Time, step time.Duration) []time.Time {
	var out []time.Time
	for i := from.Truncate(step).Add(step); !i.After(to); i = i.Add(step) {
		if firesAt(c, i, step) {
			out = append(out, i)
		}
	}
	return out
}

// checkWindow compares Next against the oracle over (from, to], both by
// iterating and from random start points.
func checkWindow(t *testing.T, rng *rand.Rand, c *cronRule, from, to time.Time) {
	t.Helper()
	step := time.Minute
	if c.second != 1 {
		step = time.Second
	}
	want := oracle(c, from, to, step)
	var got []time.Time
	for n := c.Next(from); !n.IsZero() && !n.After(to); n = c.Next(n) {
		got = append(got, n)
		if len(got) > len(want) {
			break
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%q in %v over (%v, %v]: Next gave %d fire times, oracle %d\n got %v\nwant %v",
			c.spec, c.loc, from, to, len(got), len(want), got, want)
	}
	for k := range want {
		if !got[k].Equal(want[k]) {
			t.Fatalf("%q in %v: fire %d = %v, oracle %v", c.spec, c.loc, k, got[k], want[k])
		}
	}
	span := to.Sub(from)
	for range 20 {
		s := from.Add(time.Duration(rng.Int64N(int64(span))))
		k := sort.Search(len(want), func(k int) bool { return want[k].After(s) })
		n := c.Next(s)
		if k < len(want) && !n.Equal(want[k]) || k == len(want) && !n.IsZero() && !n.After(to) {
			t.Fatalf("%q in %v: Next(%v) = %v, oracle %v", c.spec, c.loc, s, n, want[k:])
		}
	}
}

func TestPropertyOracleAroundTransitions(t *testing.T) {
	t.Parallel()
	transitions := map[string][]string{
		"Europe/Berlin":       {"2026-03-29T01:00:00Z", "2026-10-25T01:00:00Z", "2050-03-27T01:00:00Z", "2050-10-30T01:00:00Z"},
		"America/New_York":    {"2026-03-08T07:00:00Z", "2026-11-01T06:00:00Z"},
		"Australia/Lord_Howe": {"2026-04-04T15:00:00Z", "2026-10-03T15:30:00Z"},
		"UTC":                 {"2026-01-01T00:00:00Z", "2026-02-28T12:00:00Z"},
	}
	for name, ts := range transitions {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			loc := mustLoc(t, name)
			rng := rand.New(rand.NewPCG(1, uint64(len(name))))
			for range 60 {
				c := mustParse(t, randSpec(rng), loc).(*cronRule)
				for _, tr := range ts {
					at := mustTime(t, tr)
					half := 6 * time.Hour
					if c.second != 1 {
						half = 40 * time.Minute
					}
					checkWindow(t, rng, c, at.Add(-half), at.Add(half))
				}
			}
		})
	}
}

func TestPropertyNext(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			loc := mustLoc(t, name)
			rng := rand.New(rand.NewPCG(2, uint64(len(name))))
			base := mustTime(t, "2020-01-01T00:00:00Z")
			for range 300 {
				spec := randSpec(rng)
				c := mustParse(t, spec, loc).(*cronRule)
				start := base.Add(time.Duration(rng.Int64N(int64(15 * 365 * 24 * time.Hour))))
				prev := start
				for k := range 40 {
					n := c.Next(prev)
					if n.IsZero() {
						break
					}
					if !n.After(prev) {
						t.Fatalf("%q in %v: Next(%v) = %v, not after (step %d)", spec, loc, prev, n, k)
					}
					if !firesAt(c, n, time.Second) {
						t.Fatalf("%q in %v: Next(%v) = %v does not match the rule", spec, loc, prev, n)
					}
					// Monotonic: any start between prev and n gives n.
					mid := prev.Add(time.Duration(rng.Int64N(int64(n.Sub(prev)))))
					if m := c.Next(mid); !m.Equal(n) {
						t.Fatalf("%q in %v: Next(%v) = %v but Next(%v) = %v", spec, loc, prev, n, mid, m)
					}
					prev = n
				}
			}
		})
	}
}

func TestPropertyEvery(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	for range 2000 {
		d := time.Second + time.Duration(rng.Int64N(int64(48*time.Hour)))
		anchor := time.Unix(rng.Int64N(1<<33)-1<<32, rng.Int64N(1e9))
		r, err := Every(d, anchor)
		if err != nil {
			t.Fatal(err)
		}
		from := time.Unix(rng.Int64N(1<<33)-1<<32, rng.Int64N(1e9))
		n := r.Next(from)
		if !n.After(from) || n.Sub(from) > d || n.Sub(anchor)%d != 0 {
			t.Fatalf("Every(%v, %v).Next(%v) = %v: want after, within d, on the grid", d, anchor, from, n)
		}
	}
}
