package backoff

import (
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	t.Parallel()
	s := time.Second
	for _, tc := range []struct {
		name    string
		p       Policy
		attempt int
		prev    time.Duration
		rnd     float64
		want    time.Duration
	}{
		{"default full jitter, attempt 1, rnd 1-", Policy{}, 1, 0, 0.5, s / 2},
		{"default full jitter, attempt 3", Policy{}, 3, 0, 0.5, 2 * s},
		{"default caps at 1h", Policy{}, 40, 0, 0.999999, time.Duration(0.999999 * float64(time.Hour))},
		{"no jitter doubles", Policy{Jitter: JitterNone}, 4, 0, 0.3, 8 * s},
		{"equal jitter lower bound", Policy{Jitter: JitterEqual}, 2, 0, 0, s},
		{"equal jitter upper", Policy{Jitter: JitterEqual}, 2, 0, 0.5, 1500 * time.Millisecond},
		{"factor 3", Policy{Factor: 3, Jitter: JitterNone}, 3, 0, 0, 9 * s},
		{"cap", Policy{Max: 5 * s, Jitter: JitterNone}, 10, 0, 0, 5 * s},
		{"attempt below 1 counts as 1", Policy{Jitter: JitterNone}, 0, 0, 0, s},
		{"huge attempt does not overflow", Policy{Jitter: JitterNone}, 5000, 0, 0, time.Hour},
		{"fixed: the same delay at any attempt, whatever rnd", Fixed(5 * s), 7, 0, 0.9, 5 * s},
		{"fixed above default max", Fixed(2 * time.Hour), 1, 0, 0, 2 * time.Hour},
		{"list 1: the first delay", List(5*s, 30*s, 300*s), 1, 0, 0.7, 5 * s},
		{"list 2", List(5*s, 30*s, 300*s), 2, 0, 0.7, 30 * s},
		{"list 3", List(5*s, 30*s, 300*s), 3, 0, 0.7, 300 * s},
		{"list repeats last", List(5*s, 30*s, 300*s), 9, 0, 0.7, 300 * s},
		{"list above 1h", List(2 * time.Hour), 1, 0, 0, 2 * time.Hour},
		{"doubling, attempt 1: twice the base, no jitter", Doubling(100 * time.Millisecond), 1, 0, 0.5, 200 * time.Millisecond},
		{"doubling, attempt 3: 2^3 times the base", Doubling(100 * time.Millisecond), 3, 0, 0.5, 800 * time.Millisecond},
		{"exponential helper", Exponential(s, time.Minute), 3, 0, 0.25, s},
		{"decorrelated first: base..3base", Decorrelated(s, time.Minute), 1, 0, 0.5, 2 * s},
		{"decorrelated from prev", Decorrelated(s, time.Minute), 2, 10 * s, 0.5, 15500 * time.Millisecond},
		{"decorrelated capped", Decorrelated(s, time.Minute), 5, time.Hour, 0.9, time.Minute},
	} {
		if got := tc.p.Delay(tc.attempt, tc.prev, tc.rnd); got != tc.want {
			t.Errorf("%s: Delay(%d, %s, %g) = %s, want %s", tc.name, tc.attempt, tc.prev, tc.rnd, got, tc.want)
		}
	}
}

func TestDelayNeverExceedsMaxOrNegative(t *testing.T) {
	t.Parallel()
	for _, p := range []Policy{{}, Exponential(time.Millisecond, time.Second), Decorrelated(time.Second, 10*time.Second), {Jitter: JitterEqual, Max: time.Minute}} {
		max := p.withDefaults().Max
		prev := time.Duration(0)
		for a := 1; a < 200; a++ {
			for _, r := range []float64{0, 0.5, 0.999} {
				d := p.Delay(a, prev, r)
				if d < 0 || d > max {
					t.Fatalf("%+v: Delay(%d, %s, %g) = %s, outside [0, %s]", p, a, prev, r, d, max)
				}
				prev = d
			}
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p  Policy
		ok bool
	}{
		{Policy{}, true}, {Default, true}, {Fixed(time.Second), true}, {List(time.Second), true},
		{Policy{Strategy: "linear"}, false}, {Policy{Strategy: StrategyList}, false},
		{Policy{Jitter: "some"}, false}, {Policy{Base: -1}, false}, {Policy{Factor: 0.5}, false},
		{List(-time.Second), false},
	} {
		if err := tc.p.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v, want ok=%v", tc.p, err, tc.ok)
		}
	}
}
