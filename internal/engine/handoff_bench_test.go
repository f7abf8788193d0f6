package engine

import (
	"fmt"
	"sync"
	"testing"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// BenchmarkHandoff moves no-op jobs from a filler to workers and their
// outcomes back, the filler refilling the slots each batch of outcomes
// frees, as the completer does with a quick store; no store, no handler.
// via=handoff is the pool's handoff, via=channels the two buffered
// channels it replaced (a send per job each way). b.N counts jobs.
func BenchmarkHandoff(b *testing.B) {
	for _, workers := range []int{1, 4, 16} {
		for _, via := range []string{"handoff", "channels"} {
			b.Run(fmt.Sprintf("workers=%d/via=%s", workers, via), func(b *testing.B) {
				spare := make([]*job.Job, workers)
				for i := range spare {
					spare[i] = &job.Job{ID: job.ID(i + 1)}
				}
				left := b.N
				take := func(dst []*job.Job) []*job.Job {
					n := min(len(spare), left)
					left -= n
					dst = append(dst[:0], spare[len(spare)-n:]...)
					spare = spare[:len(spare)-n]
					return dst
				}
				var wg sync.WaitGroup
				var batch []*job.Job
				b.ResetTimer()
				if via == "handoff" {
					h := newHandoff(workers)
					noopWorkers(h, workers, &wg)
					var outs []finished
					for got := 0; got < b.N; {
						batch = take(batch)
						h.push(batch)
						outs, _ = h.outcomes(outs, maxFinishBatch)
						for i := range outs {
							spare = append(spare, outs[i].j)
							outs[i] = finished{}
						}
						got += len(outs)
					}
					h.close()
					wg.Wait()
					return
				}
				jobs, done := make(chan *job.Job, workers), make(chan finished, workers)
				for range workers {
					wg.Go(func() {
						for j := range jobs {
							done <- finished{j: j, outcome: store.Outcome{ID: j.ID}}
						}
					})
				}
				for got := 0; got < b.N; {
					batch = take(batch)
					for _, j := range batch {
						jobs <- j
					}
					f := <-done
					spare = append(spare, f.j)
					got++
				drain:
					for {
						select {
						case f := <-done:
							spare = append(spare, f.j)
							got++
						default:
							break drain
						}
					}
				}
				close(jobs)
				wg.Wait()
			})
		}
	}
}
