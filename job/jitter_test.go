package job_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
)

// chiSquare returns the chi-square statistic of delays in [0, bound)
// against the uniform distribution over bins bins.
func chiSquare(t *testing.T, delays []time.Duration, bound time.Duration, bins int) float64 {
	t.Helper()
	counts := make([]int, bins)
	for _, d := range delays {
		if d < 0 || d >= bound {
			t.Fatalf("delay %s outside [0, %s)", d, bound)
		}
		counts[int(int64(d)*int64(bins)/int64(bound))]++
	}
	want := float64(len(delays)) / float64(bins)
	x := 0.0
	for _, c := range counts {
		x += (float64(c) - want) * (float64(c) - want) / want
	}
	return x
}

// chiSquare99 is the chi-square value with 19 degrees of freedom (20 bins)
// that a uniform sample exceeds with probability 0.001.
const chiSquare99 = 43.82

// TestJitterRandomUniform: random jitter over 10,000 ticks is uniform
// within the bound (chi-square, 20 bins, seeded), and never reaches the
// next tick when the period is shorter than the jitter.
func TestJitterRandomUniform(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	sc := &job.Schedule{Name: "s", Jitter: 10 * time.Minute}
	delays := make([]time.Duration, 10_000)
	for i := range delays {
		delays[i] = sc.JitterDelay(time.Hour, r.Int64N)
	}
	if x := chiSquare(t, delays, 10*time.Minute, 20); x > chiSquare99 {
		t.Errorf("chi-square %.1f over 20 bins, want at most %.1f", x, chiSquare99)
	}
	// A period shorter than the jitter bounds it: never past the next tick.
	for range 10_000 {
		if d := sc.JitterDelay(time.Minute, r.Int64N); d < 0 || d >= time.Minute {
			t.Fatalf("delay %s with a 1m period", d)
		}
	}
	if d := (&job.Schedule{Name: "s"}).JitterDelay(time.Hour, r.Int64N); d != 0 {
		t.Errorf("no jitter: %s", d)
	}
}

// TestJitterStable: a stable jitter is the same at every tick of a
// schedule, and spread uniformly across 10,000 schedule names.
func TestJitterStable(t *testing.T) {
	t.Parallel()
	never := func(int64) int64 { panic("stable jitter drew a random number") }
	sc := &job.Schedule{Name: "nightly-report", Jitter: 10 * time.Minute, JitterMode: job.JitterStable}
	d0 := sc.JitterDelay(time.Hour, never)
	for range 100 {
		if d := sc.JitterDelay(time.Hour, never); d != d0 {
			t.Fatalf("stable jitter moved: %s then %s", d0, d)
		}
	}
	if d := sc.JitterDelay(time.Minute, never); d >= time.Minute {
		t.Errorf("stable jitter %s with a 1m period", d)
	}
	delays := make([]time.Duration, 10_000)
	for i := range delays {
		s := &job.Schedule{Name: fmt.Sprintf("schedule-%d", i), Jitter: 10 * time.Minute, JitterMode: job.JitterStable}
		delays[i] = s.JitterDelay(time.Hour, never)
	}
	if x := chiSquare(t, delays, 10*time.Minute, 20); x > chiSquare99 {
		t.Errorf("chi-square %.1f over 20 bins, want at most %.1f", x, chiSquare99)
	}
}
