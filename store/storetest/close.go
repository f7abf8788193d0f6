package storetest

import (
	"errors"
	"testing"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

func closeCases() []testCase {
	return []testCase{
		{"OperationsAfterCloseReturnErrClosed", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			if err := e.s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if _, err := e.s.Get(e.ctx, id); !errors.Is(err, job.ErrClosed) {
				t.Errorf("Get after Close: got %v, want job.ErrClosed", err)
			}
			j := validated(t, t0, &job.Job{Kind: "k"})
			if _, err := e.s.Enqueue(e.ctx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}}); !errors.Is(err, job.ErrClosed) {
				t.Errorf("Enqueue after Close: got %v, want job.ErrClosed", err)
			}
			if _, err := e.s.Claim(e.ctx, store.ClaimParams{Now: t0, Limit: 1, Worker: worker1, LeaseUntil: at(1000)}); !errors.Is(err, job.ErrClosed) {
				t.Errorf("Claim after Close: got %v, want job.ErrClosed", err)
			}
		}},
	}
}
