package otelhopper_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/contrib/otelhopper"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Trace a job from the code that enqueues it to its attempt: the attempt's
// span is a child of the enqueue's, which is a child of the caller's.
func Example() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	mw, err := otelhopper.New(otelhopper.Config{TracerProvider: tp})
	if err != nil {
		panic(err)
	}
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "email", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Middleware: []hopper.Middleware{mw}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	ctx, span := tp.Tracer("shop").Start(context.Background(), "checkout")
	c.Enqueue(ctx, "email", nil, &hopper.EnqueueOptions{Queue: "mail"})
	span.End()
	c.ProcessNext(context.Background(), time.Now().Add(time.Minute))

	parent := map[string]string{}
	for _, s := range exp.GetSpans() {
		parent[s.SpanContext.SpanID().String()] = s.Name
	}
	for _, s := range exp.GetSpans() {
		from := parent[s.Parent.SpanID().String()]
		if from == "" {
			from = "(root)"
		}
		fmt.Printf("%s (%s) <- %s\n", s.Name, s.SpanKind, from)
	}
	// Output:
	// send mail (producer) <- checkout
	// checkout (internal) <- (root)
	// process mail (consumer) <- send mail
}
