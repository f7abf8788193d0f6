package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// benchServer serves the API of a producer client (no workers: the jobs
// stay waiting) on a real listener, on the in-memory store or a SQLite
// file (every commit fsynced).
func benchServer(b *testing.B, sqlite bool) (*httptest.Server, *hopper.Client) {
	cfg := hopper.Config{Logger: slog.New(slog.DiscardHandler)}
	var c *hopper.Client
	var err error
	if sqlite {
		c, err = hopper.Open(context.Background(), "sqlite:"+filepath.Join(b.TempDir(), "bench.db"), cfg)
	} else {
		c, err = hopper.NewClient(cfg)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.StopNow() })
	srv := httptest.NewServer(New(c, Options{Logger: slog.New(slog.DiscardHandler)}))
	b.Cleanup(srv.Close)
	return srv, c
}

// keepAlive is an HTTP client keeping n connections open.
func keepAlive(n int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: n, MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
}

func post(b *testing.B, c *http.Client, url string, body []byte, want int) {
	res, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Error(err)
		return
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != want {
		b.Errorf("status %d", res.StatusCode)
	}
}

// BenchmarkHTTPEnqueue8: 8 keep-alive clients, each posting one job per
// request to POST /api/v1/jobs, concurrently. On SQLite, concurrent
// enqueues share commits (group commit). The clients run on the same
// machine as the server and take CPU from it: client=net/http is Go's
// http.Client, client=raw a minimal keep-alive client as wrk is (it writes
// a prepared request and reads the status and body), which leaves the
// server more of the machine.
func BenchmarkHTTPEnqueue8(b *testing.B) {
	for _, sqlite := range []bool{false, true} {
		for _, raw := range []bool{false, true} {
			name := fmt.Sprintf("%s/client=%s", map[bool]string{false: "memory", true: "sqlite"}[sqlite], map[bool]string{false: "net-http", true: "raw"}[raw])
			b.Run(name, func(b *testing.B) {
				srv, c := benchServer(b, sqlite)
				const clients = 8
				body := []byte(`{"kind":"send_email","args":{"to":"ada@example.com","subject":"Welcome"}}`)
				hc := keepAlive(clients)
				url := srv.URL + "/api/v1/jobs"
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for w := range clients {
					n := b.N / clients
					if w < b.N%clients {
						n++
					}
					wg.Go(func() {
						if !raw {
							for range n {
								post(b, hc, url, body, http.StatusCreated)
							}
							return
						}
						rc := dialRaw(b, srv.Listener.Addr().String(), "/api/v1/jobs", body)
						defer rc.conn.Close()
						for range n {
							if status := rc.do(b); status != http.StatusCreated {
								b.Errorf("status %d", status)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
				b.StopTimer()
				if n, _ := c.Count(context.Background(), hopper.ListOptions{}); n != b.N {
					b.Fatalf("%d jobs stored, want %d", n, b.N)
				}
			})
		}
	}
}

// rawClient is a minimal HTTP/1.1 keep-alive client for benchmarks.
type rawClient struct {
	conn net.Conn
	r    *bufio.Reader
	req  []byte
}

func dialRaw(b *testing.B, addr, path string, body []byte) *rawClient {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	req := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, addr, len(body))
	return &rawClient{conn: conn, r: bufio.NewReader(conn), req: append(req, body...)}
}

// do sends the request and returns the response's status, its body read
// and dropped.
func (c *rawClient) do(b *testing.B) int {
	if _, err := c.conn.Write(c.req); err != nil {
		b.Error(err)
		return 0
	}
	line, err := c.r.ReadSlice('\n') // HTTP/1.1 201 Created
	if err != nil || len(line) < 12 {
		b.Errorf("status line %q: %v", line, err)
		return 0
	}
	status, _ := strconv.Atoi(string(line[9:12]))
	length := 0
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			b.Error(err)
			return 0
		}
		if len(line) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && strings.EqualFold(string(k), "Content-Length") {
			length, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	if _, err := c.r.Discard(length); err != nil {
		b.Error(err)
	}
	return status
}

// BenchmarkHTTPEnqueueBatch: POST /api/v1/jobs/batch with 1,000 jobs per
// request, from 1 and 2 clients. b.N counts jobs.
func BenchmarkHTTPEnqueueBatch(b *testing.B) {
	const batch = 1000
	job := `{"kind":"send_email","args":{"to":"ada@example.com","subject":"Welcome"}}`
	body := []byte(`{"jobs":[` + strings.TrimSuffix(strings.Repeat(job+",", batch), ",") + `]}`)
	for _, sqlite := range []bool{false, true} {
		for _, clients := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/clients=%d", map[bool]string{false: "memory", true: "sqlite"}[sqlite], clients), func(b *testing.B) {
				srv, _ := benchServer(b, sqlite)
				hc := keepAlive(clients)
				url := srv.URL + "/api/v1/jobs/batch"
				requests := (b.N + batch - 1) / batch
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for w := range clients {
					n := requests / clients
					if w < requests%clients {
						n++
					}
					wg.Go(func() {
						for range n {
							post(b, hc, url, body, http.StatusCreated)
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(requests*batch)/time.Since(start).Seconds(), "jobs/s")
			})
		}
	}
}

// BenchmarkClientEnqueue8 is the baseline of BenchmarkHTTPEnqueue8: 8
// goroutines calling Client.Enqueue directly, with the same job, no HTTP.
func BenchmarkClientEnqueue8(b *testing.B) {
	for _, sqlite := range []bool{false, true} {
		b.Run(map[bool]string{false: "memory", true: "sqlite"}[sqlite], func(b *testing.B) {
			_, c := benchServer(b, sqlite)
			const clients = 8
			args := []byte(`{"to":"ada@example.com","subject":"Welcome"}`)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range clients {
				n := b.N / clients
				if w < b.N%clients {
					n++
				}
				wg.Go(func() {
					for range n {
						if _, err := c.Enqueue(context.Background(), "send_email", args, nil); err != nil {
							b.Error(err)
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
		})
	}
}

// BenchmarkHandlerEnqueue: the handler alone (no network, no HTTP
// parsing) enqueueing one job in memory: what the API adds to Enqueue.
func BenchmarkHandlerEnqueue(b *testing.B) {
	c, err := hopper.NewClient(hopper.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer c.StopNow()
	h := New(c, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}) // formats the audit line, as a real server does
	body := []byte(`{"kind":"send_email","args":{"to":"ada@example.com","subject":"Welcome"}}`)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/api/v1/jobs", bytes.NewReader(body)))
		if rec.Code != http.StatusCreated {
			b.Fatal(rec.Code)
		}
	}
}
