package hopper_test

import (
	"context"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// BenchmarkMiddlewareNone is what middleware costs when none is set:
// compare its figures with BenchmarkMiddlewareSet and, for "nothing", with
// the same benchmark of a tree without middleware (docs/performance.md,
// "Middleware"). worked is enqueue (batches of 1,000) → no-op handler →
// completed with 100 workers, as BenchmarkEndToEndMemory; enqueue is one
// Enqueue call of one job on a client not started.
func BenchmarkMiddlewareNone(b *testing.B) {
	middlewareBench(b, nil)
}

// BenchmarkMiddlewareSet is BenchmarkMiddlewareNone with one client-level
// Middleware whose every function is set and does nothing.
func BenchmarkMiddlewareSet(b *testing.B) {
	middlewareBench(b, []hopper.Middleware{{
		Enqueue: func(context.Context, *hopper.EnqueueRequest) (func(hopper.EnqueueResult, error), error) {
			return nil, nil
		},
		Work: func(ctx context.Context, _ *hopper.Job, next func(context.Context) error) error {
			return next(ctx)
		},
		WorkStart: func(context.Context, *hopper.Job) {},
		WorkEnd:   func(context.Context, *hopper.Job, error, time.Duration) {},
	}})
}

func middlewareBench(b *testing.B, mw []hopper.Middleware) {
	b.Run("worked", func(b *testing.B) {
		endToEnd(b, hopper.Config{Concurrency: 100, Middleware: mw})
	})
	b.Run("enqueue", func(b *testing.B) {
		c, _, _ := noopClient(b, hopper.Config{Middleware: mw, CompletedRetention: -1})
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := c.Enqueue(ctx, "noop", nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
