package otelhopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/contrib/otelhopper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// farFuture is an instant every job enqueued now is due at.
var farFuture = time.Date(2100, 1, 4, 0, 0, 0, 0, time.UTC)

// traced returns a recorder and a tracer provider writing to it.
func traced() (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	rec := tracetest.NewSpanRecorder()
	return rec, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
}

// client returns a memory client with the middleware of cfg and the
// kinds "ok", "fails", "permanent" and "panics".
func client(t *testing.T, cfg otelhopper.Config) *hopper.Client {
	t.Helper()
	mw, err := otelhopper.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "ok", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
	hopper.RegisterRaw(ws, "fails", func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("smtp down") }, nil)
	hopper.RegisterRaw(ws, "permanent", func(context.Context, json.RawMessage) (any, error) {
		return nil, hopper.Permanent(errors.New("no such user"))
	}, nil)
	hopper.RegisterRaw(ws, "panics", func(context.Context, json.RawMessage) (any, error) { panic("boom") }, &hopper.EnqueueOptions{MaxAttempts: 1})
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Middleware: []hopper.Middleware{mw}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.StopNow() })
	return c
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func byName(t *testing.T, spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	t.Helper()
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// TestSpans: enqueue makes a producer span "send <queue>", a child of the
// caller's span, and each attempt a consumer span "process <queue>", a
// child of the enqueue's, with the messaging attributes, the outcome, and
// the error recorded.
func TestSpans(t *testing.T) {
	t.Parallel()
	rec, tp := traced()
	c := client(t, otelhopper.Config{TracerProvider: tp})
	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	res, err := c.Enqueue(ctx, "ok", nil, &hopper.EnqueueOptions{Queue: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	parent.End()
	j, _ := c.Get(ctx, res.ID)
	if !strings.HasPrefix(j.Meta["traceparent"], "00-"+parent.SpanContext().TraceID().String()) {
		t.Errorf("job meta %v: no traceparent of the caller's trace", j.Meta)
	}
	if _, _, err := c.ProcessNext(context.Background(), farFuture); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	send, proc := byName(t, spans, "send mail"), byName(t, spans, "process mail")
	if len(send) != 1 || len(proc) != 1 {
		t.Fatalf("spans %v: want one send mail and one process mail", names(spans))
	}
	s, p := send[0], proc[0]
	if s.SpanKind() != trace.SpanKindProducer || s.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("send: kind %s parent %s, want a producer child of the request", s.SpanKind(), s.Parent().SpanID())
	}
	if p.SpanKind() != trace.SpanKindConsumer || p.Parent().SpanID() != s.SpanContext().SpanID() || p.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("process: kind %s parent %s trace %s, want a consumer child of send in the request's trace", p.SpanKind(), p.Parent().SpanID(), p.SpanContext().TraceID())
	}
	a := attrs(p)
	for k, want := range map[attribute.Key]string{
		otelhopper.AttrSystem: "hopper", otelhopper.AttrDestination: "mail", otelhopper.AttrKind: "ok",
		otelhopper.AttrOperationName: "process", otelhopper.AttrMessageID: strconv.FormatInt(int64(res.ID), 10), otelhopper.AttrOutcome: "completed",
	} {
		if got := a[k].String(); got != want {
			t.Errorf("process %s = %q, want %q", k, got, want)
		}
	}
	if a[otelhopper.AttrAttempt].AsInt64() != 1 {
		t.Errorf("process attempt %v, want 1", a[otelhopper.AttrAttempt])
	}
	if attrs(s)[otelhopper.AttrMessageID].String() != strconv.FormatInt(int64(res.ID), 10) {
		t.Errorf("send message id %v", attrs(s)[otelhopper.AttrMessageID])
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// TestErrorsRecorded: a failed, a permanently failed and a panicking
// attempt are recorded as errors with their outcome; the panic goes on
// to the engine, which fails the attempt as without the middleware.
func TestErrorsRecorded(t *testing.T) {
	t.Parallel()
	rec, tp := traced()
	c := client(t, otelhopper.Config{TracerProvider: tp})
	ctx := context.Background()
	for _, k := range []string{"fails", "permanent", "panics"} {
		if _, err := c.Enqueue(ctx, k, nil, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.ProcessNext(ctx, farFuture); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"fails": "failed", "permanent": "failed_permanently", "panics": "panicked"}
	for _, s := range byName(t, rec.Ended(), "process default") {
		a := attrs(s)
		kind := a[otelhopper.AttrKind].String()
		if a[otelhopper.AttrOutcome].String() != want[kind] || s.Status().Code != codes.Error || len(s.Events()) == 0 || s.Events()[0].Name != "exception" {
			t.Errorf("%s: outcome %v status %v events %v", kind, a[otelhopper.AttrOutcome], s.Status(), s.Events())
		}
		delete(want, kind)
	}
	if len(want) != 0 {
		t.Errorf("no span for %v", want)
	}
	dead, _ := c.DeadJobs(ctx, 0, 0)
	if len(dead) != 2 {
		t.Errorf("%d dead jobs, want the permanent and the panicking", len(dead))
	}
}

// TestLinkOnly: with LinkOnly the attempt's span starts a trace of its
// own, linked to the enqueue's.
func TestLinkOnly(t *testing.T) {
	t.Parallel()
	rec, tp := traced()
	c := client(t, otelhopper.Config{TracerProvider: tp, LinkOnly: true})
	ctx := context.Background()
	c.Enqueue(ctx, "ok", nil, nil)
	c.ProcessNext(ctx, farFuture)
	send, proc := byName(t, rec.Ended(), "send default")[0], byName(t, rec.Ended(), "process default")[0]
	if proc.Parent().IsValid() || len(proc.Links()) != 1 || proc.Links()[0].SpanContext.SpanID() != send.SpanContext().SpanID() {
		t.Errorf("process: parent %v links %v, want a root linked to send", proc.Parent(), proc.Links())
	}
}

// TestMetrics: enqueues and attempts are counted and attempts timed
// through the meter provider given.
func TestMetrics(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	_, tp := traced()
	c := client(t, otelhopper.Config{TracerProvider: tp, MeterProvider: mp})
	ctx := context.Background()
	for range 3 {
		c.Enqueue(ctx, "ok", nil, nil)
	}
	c.Enqueue(ctx, "fails", nil, nil)
	c.RunReady(ctx, farFuture)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[m.Name] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					got[m.Name] += int64(p.Count)
					if o, _ := p.Attributes.Value(otelhopper.AttrOutcome); o.String() == "failed" {
						got["failed"] += int64(p.Count)
					}
				}
			}
		}
	}
	want := map[string]int64{"messaging.client.sent.messages": 4, "messaging.client.consumed.messages": 4, "messaging.process.duration": 4, "failed": 1}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %d, want %d (all: %v)", k, got[k], w, got)
		}
	}
}
