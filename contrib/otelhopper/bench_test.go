package otelhopper_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/contrib/otelhopper"
	"github.com/hopperq/hopper/internal/cputime"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkOverhead is the root module's end-to-end benchmark (enqueue in
// batches of 1,000 → no-op handler → completed, in memory, 100 workers)
// without the middleware, with it on no-op providers (an empty
// Middleware: New recognizes them), on otel's global providers never set
// (its whole path, recording nothing), and with it
// recording every span (an SDK tracer provider with an in-memory
// exporter, batched) and every metric (an SDK meter provider):
//
//	cd contrib/otelhopper && go test -run '^$' -bench Overhead -benchtime 1000000x -count 6
func BenchmarkOverhead(b *testing.B) {
	b.Run("none", func(b *testing.B) { endToEnd(b, nil) })
	b.Run("noop", func(b *testing.B) {
		mw, err := otelhopper.New(otelhopper.Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
		if err != nil {
			b.Fatal(err)
		}
		endToEnd(b, []hopper.Middleware{mw})
	})
	b.Run("global-unset", func(b *testing.B) {
		mw, err := otelhopper.New(otelhopper.Config{}) // otel's global providers, never set: delegating no-ops
		if err != nil {
			b.Fatal(err)
		}
		endToEnd(b, []hopper.Middleware{mw})
	})
	b.Run("recording", func(b *testing.B) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		mw, err := otelhopper.New(otelhopper.Config{TracerProvider: tp, MeterProvider: mp})
		if err != nil {
			b.Fatal(err)
		}
		endToEnd(b, []hopper.Middleware{mw})
		b.StopTimer()
		tp.Shutdown(context.Background())
	})
}

func endToEnd(b *testing.B, mw []hopper.Middleware) {
	ws := hopper.NewWorkers()
	var ran atomic.Int64
	done := make(chan struct{})
	n := int64(b.N)
	hopper.RegisterRaw(ws, "noop", func(context.Context, json.RawMessage) (any, error) {
		if ran.Add(1) == n {
			close(done)
		}
		return nil, nil
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Concurrency: 100, Middleware: mw, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	batch := make([]hopper.EnqueueRequest, 1000)
	for i := range batch {
		batch[i] = hopper.EnqueueRequest{Kind: "noop"}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	c.Start()
	for left := b.N; left > 0; left -= len(batch) {
		if _, err := c.EnqueueMany(ctx, batch[:min(left, len(batch))]); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	if err := c.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/job")
}
