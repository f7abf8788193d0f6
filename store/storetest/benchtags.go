package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// BenchTags measures List and Count by tag among n jobs: one in a
// thousand tagged "rare", every other one "common", the rest untagged
// (filled untimed, in batches of 1,000). Each sub-benchmark is one call:
// a first page of 100 (oldest first and newest first) and a count, of
// either tag. Without an index a rare tag's page reads every job; with
// one it reads its entries.
func BenchTags(b *testing.B, n int, s store.Store) {
	ctx := context.Background()
	batch := make([]*job.Job, 0, 1000)
	for i := range n {
		j := &job.Job{Kind: "k", Queue: "q", MaxAttempts: 1}
		switch {
		case i%1000 == 0:
			j.Tags = []string{"rare", "common"}
		case i%2 == 0:
			j.Tags = []string{"common"}
		}
		if err := j.Validate(t0); err != nil {
			b.Fatal(err)
		}
		batch = append(batch, j)
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: batch}); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	for _, tag := range []string{"rare", "common"} {
		for _, desc := range []bool{false, true} {
			b.Run(fmt.Sprintf("list/tag=%s/desc=%v", tag, desc), func(b *testing.B) {
				for range b.N {
					js, err := s.List(ctx, store.ListParams{Tag: tag, Desc: desc, Limit: 100})
					if err != nil || len(js) != min(100, n/1000) && tag == "rare" || len(js) != min(100, n/2) && tag == "common" {
						b.Fatalf("List: %d jobs, %v", len(js), err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
			})
		}
		for _, states := range [][]job.State{nil, {job.StateAvailable}} {
			b.Run(fmt.Sprintf("count/tag=%s/states=%v", tag, states), func(b *testing.B) {
				for range b.N {
					if _, err := s.Count(ctx, store.ListParams{Tag: tag, States: states}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
			})
		}
	}
}
