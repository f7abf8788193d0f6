package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServeBounds runs hopper serve --http and checks, from outside, what
// a client can make it hold: a request body that never arrives ends, once
// the body's 30 seconds have passed, in a 408 that names no address of the
// connection (the API's and the dashboard's), and 2,000 jobs enqueued in
// 2,000 new queues leave /metrics and the overview bounded.
func TestServeBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it for 30s; skipped with -short")
	}
	t.Parallel()
	dir := t.TempDir()
	c := newHop(t, dir)
	srv := c.serveHTTP()
	defer c.stop(srv.server)
	addr := strings.TrimPrefix(srv.url, "http://")

	// Bodies that never arrive, sent first: the server answers them once
	// their time is up, while the rest of the test goes on.
	type late struct {
		path, ctype, body string
		res               chan string
	}
	lates := []*late{
		{path: "/api/v1/jobs", ctype: "application/json", body: `{"kind":`},
		{path: "/bulk", ctype: "application/x-www-form-urlencoded", body: "action=cancel&ids="},
	}
	for _, l := range lates {
		l.res = make(chan string, 1)
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(3 * time.Minute)) // bounds a failing test
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: 100\r\n\r\n%s", l.path, addr, l.ctype, l.body)
		go func() {
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				l.res <- "no response: " + err.Error()
				return
			}
			b, _ := io.ReadAll(res.Body)
			l.res <- fmt.Sprintf("%d %s", res.StatusCode, b)
		}()
	}

	// 2,000 jobs in 2,000 new queues, in one batch.
	const queues = 2000
	var batch strings.Builder
	batch.WriteString(`{"jobs":[`)
	for i := range queues {
		if i > 0 {
			batch.WriteString(",")
		}
		fmt.Fprintf(&batch, `{"kind":"exec","args":{"command":"true"},"queue":"q%04d","delay":"1h"}`, i)
	}
	batch.WriteString("]}")
	if status, body := get(t, "POST", "http://"+addr+"/api/v1/jobs/batch", batch.String()); status != http.StatusCreated {
		t.Fatalf("batch of %d jobs: %d %s", queues, status, body)
	}
	_, metrics := get(t, "GET", "http://"+addr+"/metrics", "")
	series, enqueued := 0, 0.0
	for line := range strings.Lines(metrics) {
		if !strings.HasPrefix(line, "hopper_") {
			continue
		}
		series++
		if strings.HasPrefix(line, "hopper_jobs_enqueued_total{") {
			v, _ := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndexByte(line, ' '):]), 64)
			enqueued += v
		}
	}
	t.Logf("/metrics after %d new queues: %d bytes, %d hopper_ series", queues, len(metrics), series)
	if len(metrics) > 512<<10 || series > 6000 || enqueued != queues || !strings.Contains(metrics, `queue="(other)"`) {
		t.Errorf("/metrics after %d new queues: %d bytes, %d hopper_ series, %v enqueued; want at most 512 KiB, 6,000 series, all %d counted",
			queues, len(metrics), series, enqueued, queues)
	}
	_, overview := get(t, "GET", "http://"+addr+"/", "")
	t.Logf("overview after %d new queues: %d bytes", queues, len(overview))
	if len(overview) > 200<<10 || !strings.Contains(overview, "queues 1–50 of 2,000") {
		t.Errorf("overview after %d new queues: %d bytes; want at most 200 KiB, a page of queues", queues, len(overview))
	}

	for _, l := range lates {
		got := <-l.res
		if !strings.HasPrefix(got, "408 ") || !strings.Contains(got, "did not arrive within 30s") {
			t.Errorf("POST %s with a body that never arrives: %.300s; want 408 saying so", l.path, got)
		}
		for _, leak := range []string{"127.0.0.1", "tcp", "i/o timeout"} {
			if strings.Contains(got, leak) {
				t.Errorf("POST %s: the 408 says %q", l.path, leak)
			}
		}
	}
	if n := strings.TrimSpace(c.run("", "jobs", "count")); n != strconv.Itoa(queues) {
		t.Errorf("%s jobs in the store, want the batch's %d only", n, queues)
	}
}

// get sends a request and returns the response's status and body.
func get(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}
