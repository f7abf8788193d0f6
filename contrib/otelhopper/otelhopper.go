// Package otelhopper traces and measures Hopper's jobs with OpenTelemetry:
// a span for each enqueue and one for each attempt, named and attributed
// after OpenTelemetry's semantic conventions for messaging, and metrics
// through an injected meter provider. It is a hopper.Middleware:
//
//	mw, err := otelhopper.New(otelhopper.Config{TracerProvider: tp, MeterProvider: mp})
//	client, err := hopper.Open(ctx, url, hopper.Config{Workers: ws, Middleware: []hopper.Middleware{mw}})
//
// The W3C trace context of the code that enqueues a job is carried in the
// job's metadata (the keys "traceparent" and "tracestate"), so the span of
// each attempt is a child of the span that enqueued it — in any process
// that runs the job, on any store that keeps it (SQLite, PostgreSQL). The
// HTTP API copies a request's traceparent header into the job's metadata
// too, so a job enqueued over HTTP continues its caller's trace.
//
// This package is a module of its own (contrib/otelhopper): the
// OpenTelemetry modules are its requirements, never the hopper module's.
package otelhopper

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hopperq/hopper"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/hopperq/hopper/contrib/otelhopper"

// The attributes of the spans and metrics, after the messaging semantic
// conventions (messaging.*) and Hopper's own (hopper.*).
const (
	AttrSystem        = attribute.Key("messaging.system")           // "hopper"
	AttrOperationName = attribute.Key("messaging.operation.name")   // "send", "process"
	AttrOperationType = attribute.Key("messaging.operation.type")   // "send", "process"
	AttrDestination   = attribute.Key("messaging.destination.name") // the queue
	AttrMessageID     = attribute.Key("messaging.message.id")       // the job's ID
	AttrKind          = attribute.Key("hopper.job.kind")
	AttrAttempt       = attribute.Key("hopper.job.attempt")
	AttrDuplicate     = attribute.Key("hopper.job.duplicate") // enqueue: the unique key was taken
	AttrOutcome       = attribute.Key("hopper.job.outcome")   // attempt: completed, failed, failed_permanently, panicked
	AttrErrorType     = attribute.Key("error.type")
)

// Config configures the middleware. Zero fields take the global
// providers and propagator of package otel.
type Config struct {
	// TracerProvider makes the spans (default otel.GetTracerProvider()).
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics (default otel.GetMeterProvider()).
	MeterProvider metric.MeterProvider
	// Propagator carries the trace context in a job's metadata (default
	// otel.GetTextMapPropagator(), or propagation.TraceContext if that
	// carries nothing).
	Propagator propagation.TextMapPropagator
	// LinkOnly makes each attempt's span the root of a trace of its own,
	// linked to the enqueue's span, rather than its child: for jobs that
	// run long after they are enqueued, where one trace would span days.
	LinkOnly bool
}

// New returns the middleware that traces and measures jobs. Set it on a
// client (hopper.Config.Middleware) to cover every kind, or on kinds
// (Workers.Use). It fails only if a metric cannot be made. Given the
// no-op providers of go.opentelemetry.io/otel/trace/noop and
// go.opentelemetry.io/otel/metric/noop (both), it returns an empty
// Middleware: nothing would be recorded, and jobs then cost what they
// cost without it. The global providers of package otel, before a
// program sets them, are not recognized as no-op (they may be set
// later) and cost the middleware's full path.
func New(cfg Config) (hopper.Middleware, error) {
	tp := cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	prop := cfg.Propagator
	if prop == nil {
		prop = otel.GetTextMapPropagator()
		if len(prop.Fields()) == 0 {
			prop = propagation.TraceContext{}
		}
	}
	_, noopTraces := tp.(tracenoop.TracerProvider)
	_, noopMetrics := mp.(metricnoop.MeterProvider)
	if noopTraces && noopMetrics {
		// Nothing would be recorded: no middleware, so jobs cost what they
		// cost without it (BenchmarkOverhead/noop).
		return hopper.Middleware{}, nil
	}
	meter := mp.Meter(ScopeName)
	var errs [3]error
	in := &instruments{tracer: tp.Tracer(ScopeName), prop: prop, linkOnly: cfg.LinkOnly}
	in.sent, errs[0] = meter.Int64Counter("messaging.client.sent.messages",
		metric.WithDescription("Jobs enqueued (duplicates of a unique key included, with hopper.job.duplicate)"), metric.WithUnit("{message}"))
	in.consumed, errs[1] = meter.Int64Counter("messaging.client.consumed.messages",
		metric.WithDescription("Attempts of jobs started"), metric.WithUnit("{message}"))
	in.duration, errs[2] = meter.Float64Histogram("messaging.process.duration",
		metric.WithDescription("Duration of attempts' handler calls"), metric.WithUnit("s"))
	if err := errors.Join(errs[:]...); err != nil {
		return hopper.Middleware{}, err
	}
	return hopper.Middleware{Enqueue: in.enqueue, Work: in.work}, nil
}

type instruments struct {
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
	linkOnly bool
	sent     metric.Int64Counter
	consumed metric.Int64Counter
	duration metric.Float64Histogram
}

var system = AttrSystem.String("hopper")

// enqueue starts a producer span "send" for a job about to be enqueued,
// a child of ctx's span (or, if ctx has none, of the trace context the
// job's metadata already holds), and puts its context in the job's
// metadata; the span ends when the store has answered, named after the
// job's queue.
func (in *instruments) enqueue(ctx context.Context, r *hopper.EnqueueRequest) (func(hopper.EnqueueResult, error), error) {
	kind := r.Kind
	if r.Func != nil {
		kind = "func"
	}
	if !trace.SpanContextFromContext(ctx).IsValid() && len(r.Options.Meta) > 0 {
		// No span in the caller's context, but a trace context in the
		// job's metadata (the HTTP API's traceparent header): continue it.
		ctx = in.prop.Extract(ctx, propagation.MapCarrier(r.Options.Meta))
	}
	ctx, span := in.tracer.Start(ctx, "send", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(system, AttrOperationName.String("send"), AttrOperationType.String("send"), AttrKind.String(kind)))
	in.prop.Inject(ctx, propagation.MapCarrier(r.Options.Meta))
	return func(res hopper.EnqueueResult, err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(AttrErrorType.String(errorType(err)))
			span.End()
			return
		}
		span.SetName("send " + res.Queue)
		span.SetAttributes(AttrDestination.String(res.Queue), AttrMessageID.String(strconv.FormatInt(int64(res.ID), 10)),
			AttrDuplicate.Bool(res.Duplicate))
		span.End()
		in.sent.Add(ctx, 1, metric.WithAttributes(system, AttrOperationName.String("send"),
			AttrDestination.String(res.Queue), AttrKind.String(kind), AttrDuplicate.Bool(res.Duplicate)))
	}, nil
}

// work runs an attempt in a consumer span "process <queue>", a child of
// (or, with LinkOnly, linked to) the span whose context the job's
// metadata carries, and records its outcome, error and duration.
func (in *instruments) work(ctx context.Context, j *hopper.Job, next func(context.Context) error) (err error) {
	attrs := []attribute.KeyValue{system, AttrOperationName.String("process"), AttrOperationType.String("process"),
		AttrDestination.String(j.Queue), AttrKind.String(j.Kind), AttrMessageID.String(strconv.FormatInt(int64(j.ID), 10)), AttrAttempt.Int(j.Attempt)}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
	parent := ctx
	if len(j.Meta) > 0 {
		remote := in.prop.Extract(context.Background(), propagation.MapCarrier(j.Meta))
		if sc := trace.SpanContextFromContext(remote); sc.IsValid() {
			if in.linkOnly {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}), trace.WithNewRoot())
			} else {
				parent = trace.ContextWithRemoteSpanContext(ctx, sc)
			}
		}
	}
	ctx, span := in.tracer.Start(parent, "process "+j.Queue, opts...)
	metricAttrs := metric.WithAttributes(system, AttrOperationName.String("process"), AttrDestination.String(j.Queue), AttrKind.String(j.Kind))
	in.consumed.Add(ctx, 1, metricAttrs)
	start := time.Now()
	outcome := "panicked"
	defer func() {
		took := time.Since(start).Seconds()
		if r := recover(); r != nil {
			perr := fmt.Errorf("panic: %v", r)
			span.RecordError(perr)
			span.SetStatus(codes.Error, "panic")
			span.SetAttributes(AttrOutcome.String(outcome), AttrErrorType.String("panic"))
			span.End()
			in.duration.Record(ctx, took, metricAttrs, metric.WithAttributes(AttrOutcome.String(outcome), AttrErrorType.String("panic")))
			panic(r)
		}
		span.SetAttributes(AttrOutcome.String(outcome))
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(AttrErrorType.String(errorType(err)))
			in.duration.Record(ctx, took, metricAttrs, metric.WithAttributes(AttrOutcome.String(outcome), AttrErrorType.String(errorType(err))))
		} else {
			in.duration.Record(ctx, took, metricAttrs, metric.WithAttributes(AttrOutcome.String(outcome)))
		}
		span.End()
	}()
	err = next(ctx)
	switch {
	case err == nil:
		outcome = "completed"
	case hopper.IsPermanent(err):
		outcome = "failed_permanently"
	default:
		outcome = "failed"
	}
	return err
}

// errorType is the error.type of err: its context's when the attempt was
// cancelled or timed out, else "error" (an error's text varies too much
// for a metric's attribute).
func errorType(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "error"
}
