package mixedload

import (
	"context"
	"testing"
	"time"

	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

func TestParseLoads(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []Load
		err  bool
	}{
		{in: "30%,50%,80%,max", want: StandardLoads},
		{in: "5000, 250/s", want: []Load{{Rate: 5000}, {Rate: 250}}},
		{in: "12.5%", want: []Load{{Fraction: 0.125}}},
		{in: "fast", err: true},
		{in: "0%", err: true},
		{in: "-100", err: true},
		{in: "30%,", err: true},
		{in: "NaN", err: true},
		{in: "Inf%", err: true},
	} {
		got, err := ParseLoads(tc.in)
		if (err != nil) != tc.err || !tc.err && !equal(got, tc.want) {
			t.Errorf("ParseLoads(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
		for _, l := range got {
			if back, err := ParseLoads(l.String()); err != nil || back[0] != l {
				t.Errorf("%v: String %q reads back as %v, %v", l, l.String(), back, err)
			}
		}
	}
}

func equal(a, b []Load) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRun: a short load on the memory store inserts and works jobs, and
// measures their latency; the capacity is measured on the jobs asked for.
func TestRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := Config{
		Open: func(context.Context) (store.Store, func(), error) {
			st := memstore.New()
			return st, func() { st.Close() }, nil
		},
		Workers: 4, Producers: 2, Duration: 300 * time.Millisecond, Warmup: -1, CapacityJobs: 500, Batch: 100,
	}
	c, err := MeasureCapacity(ctx, cfg)
	if err != nil || c.Jobs != 500 || !(c.Rate > 0) {
		t.Fatalf("capacity %+v, %v", c, err)
	}
	r, err := Run(ctx, cfg, c.Rate, Load{Rate: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if r.Target != 1000 || !(r.Inserted > 0) || !(r.Worked > 0) || r.Samples == 0 || r.P99 < r.P50 || r.Max < r.P99 {
		t.Fatalf("result %+v", r)
	}
	if _, err := Run(ctx, cfg, 0, Load{Fraction: 0.5}); err == nil {
		t.Error("a fraction of no capacity: no error")
	}
	if _, err := Run(ctx, Config{}, 1, FlatOut); err == nil {
		t.Error("no Open: no error")
	}
}
