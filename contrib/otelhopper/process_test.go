package otelhopper_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/contrib/otelhopper"
	"github.com/hopperq/hopper/httpapi"
	"github.com/hopperq/hopper/internal/pgtest"
	_ "github.com/hopperq/hopper/store/pgstore" // postgres://
	_ "github.com/hopperq/hopper/store/sqlitestore"
	"go.opentelemetry.io/otel/propagation"
)

// workerEnv names the store a worker process (TestWorkerProcess, run by
// TestTraceAcrossProcesses) works; unset, that test does nothing.
const workerEnv = "OTELHOPPER_TEST_WORKER_STORE"

// spanLine is a span as the worker process prints it.
type spanLine struct {
	Name, Trace, Span, Parent string
}

// TestTraceAcrossProcesses: a trace from an HTTP request that enqueues a
// job (its traceparent header) goes through the API's enqueue span in
// this process and the job's attempt in another process sharing the
// store, as one trace: the attempt's span is a child of the enqueue's,
// on PostgreSQL and on SQLite.
func TestTraceAcrossProcesses(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"postgres", "sqlite"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var url string
			if name == "postgres" {
				url = pgtest.StoreURL(t, 2)
			} else {
				url = "sqlite:" + t.TempDir() + "/h.db"
			}
			ctx := context.Background()
			rec, tp := traced()
			mw, err := otelhopper.New(otelhopper.Config{TracerProvider: tp})
			if err != nil {
				t.Fatal(err)
			}
			// This process serves the API and runs nothing.
			c, err := hopper.Open(ctx, url, hopper.Config{ExternalKinds: []string{"ok"}, Middleware: []hopper.Middleware{mw},
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer c.StopNow()
			srv := httptest.NewServer(httpapi.New(c, httpapi.Options{Logger: slog.New(slog.DiscardHandler)}))
			defer srv.Close()

			// The caller's span, sent as a traceparent header.
			callerCtx, caller := tp.Tracer("caller").Start(ctx, "checkout")
			req, _ := http.NewRequest("POST", srv.URL+"/api/v1/jobs", strings.NewReader(`{"kind":"ok"}`))
			req.Header.Set("Content-Type", "application/json")
			propagation.TraceContext{}.Inject(callerCtx, propagation.HeaderCarrier(req.Header))
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			caller.End()
			if res.StatusCode != http.StatusCreated {
				t.Fatalf("POST /jobs: %s", res.Status)
			}
			send := byName(t, rec.Ended(), "send default")
			if len(send) != 1 || send[0].Parent().SpanID() != caller.SpanContext().SpanID() {
				t.Fatalf("enqueue spans %v: want one send default, a child of the caller's", names(rec.Ended()))
			}

			// Another process works the job.
			cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$", "-test.v")
			cmd.Env = append(os.Environ(), workerEnv+"="+url)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("worker process: %v\n%s", err, out)
			}
			var proc *spanLine
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				if line, ok := strings.CutPrefix(sc.Text(), "SPAN "); ok {
					var s spanLine
					if err := json.Unmarshal([]byte(line), &s); err != nil {
						t.Fatal(err)
					}
					if s.Name == "process default" {
						proc = &s
					}
				}
			}
			if proc == nil {
				t.Fatalf("the worker process made no process span:\n%s", out)
			}
			if proc.Trace != caller.SpanContext().TraceID().String() || proc.Parent != send[0].SpanContext().SpanID().String() {
				t.Errorf("attempt span %+v: want trace %s (the caller's) and parent %s (the enqueue's)",
					proc, caller.SpanContext().TraceID(), send[0].SpanContext().SpanID())
			}
		})
	}
}

// TestWorkerProcess is the other process of TestTraceAcrossProcesses: it
// runs the one job waiting in the store named by $OTELHOPPER_TEST_WORKER_STORE
// with the middleware and prints the spans it ended.
func TestWorkerProcess(t *testing.T) {
	url := os.Getenv(workerEnv)
	if url == "" {
		t.Skip("run by TestTraceAcrossProcesses")
	}
	ctx := context.Background()
	rec, tp := traced()
	mw, err := otelhopper.New(otelhopper.Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "ok", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
	c, err := hopper.Open(ctx, url, hopper.Config{Workers: ws, Middleware: []hopper.Middleware{mw}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	j, ok, err := c.ProcessNext(ctx, time.Now().Add(time.Minute))
	if err != nil || !ok || j.State != hopper.StateCompleted {
		t.Fatalf("ProcessNext: %v %v %v", j, ok, err)
	}
	for _, s := range rec.Ended() {
		b, _ := json.Marshal(spanLine{Name: s.Name(), Trace: s.SpanContext().TraceID().String(),
			Span: s.SpanContext().SpanID().String(), Parent: s.Parent().SpanID().String()})
		fmt.Printf("SPAN %s\n", b)
	}
}
