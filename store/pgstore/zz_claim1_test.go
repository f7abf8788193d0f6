package pgstore_test

import (
	"testing"
	"time"

	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
)

func BenchmarkZZClaimOne(b *testing.B) {
	s := openIn(b, freshSchema(b), pgstore.Options{PollInterval: time.Hour})
	j := benchJobs(b, 1)
	var enq, cl time.Duration
	for range b.N {
		t := time.Now()
		if _, err := s.Enqueue(b.Context(), store.EnqueueParams{Now: t0, Jobs: j}); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		res, err := s.Claim(b.Context(), store.ClaimParams{Now: t0, Limit: 10, Worker: "w", LeaseUntil: t0.Add(time.Hour), Kinds: []string{j[0].Kind}})
		if err != nil || len(res.Jobs) != 1 {
			b.Fatal(err, len(res.Jobs))
		}
		t3 := time.Now()
		enq += t2.Sub(t)
		cl += t3.Sub(t2)
	}
	b.ReportMetric(float64(enq.Microseconds())/float64(b.N), "enq-µs")
	b.ReportMetric(float64(cl.Microseconds())/float64(b.N), "claim-µs")
}
