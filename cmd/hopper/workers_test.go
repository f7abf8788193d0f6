//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// The conformance suite of the worker protocol (docs/workers.md): a real
// hopper serve, spoken to over HTTP as a client in another language would
// (TestWorkerProtocolConformance), and the reference clients run as real
// python3 and node processes (TestWorkerClients).

// Tokens of the worker tests.
const (
	wAdmin  = "workers-test-admin-token-0123456789"
	wWorker = "workers-test-worker-token-0123456789"
	wOther  = "workers-test-other-worker-0123456789"
	wMail   = "workers-test-mail-worker-0123456789"
)

// remoteKinds are the kinds the example workers run.
const remoteKinds = "echo,flaky,reject,slow,crash,snooze"

// serveWorkers starts hopper serve --http with the worker tokens, the
// example workers' kinds external, a lease of 2s and rescues every 500ms.
func serveWorkers(t *testing.T) (*hop, *apiServer) {
	if testing.Short() {
		t.Skip("builds the binary and runs it; skipped with -short")
	}
	c := newHop(t, t.TempDir())
	c.env = []string{workerTokens}
	return c, c.serveWorkers()
}

// workerTokens is the environment entry of the worker tests' tokens.
const workerTokens = "HOPPER_TOKENS=admin:" + wAdmin + ",w=worker:" + wWorker + ",w2=worker:" + wOther + ",mail=worker/emails:" + wMail

// serveWorkers starts hopper serve --http on c's database as the function
// serveWorkers does (c.env must hold workerTokens).
func (c *hop) serveWorkers() *apiServer {
	c.t.Helper()
	return c.serveHTTP("--external-kinds", remoteKinds, "--lease", "2s", "--rescue-interval", "500ms")
}

// call sends a request with token and decodes the answer into v (if not
// nil and the status is 2xx); it returns the status and the body.
func call(t *testing.T, s *apiServer, token, method, path, body string, v any) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if v != nil && res.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return res.StatusCode, string(b)
}

// must is call that fails the test unless the status is want.
func must(t *testing.T, s *apiServer, token, method, path, body string, want int, v any) string {
	t.Helper()
	status, b := call(t, s, token, method, path, body, v)
	if status != want {
		t.Fatalf("%s %s %s: %d, want %d: %s", method, path, body, status, want, b)
	}
	return b
}

type (
	wWorkerView struct {
		ID                string
		Queues            []string
		HeartbeatInterval string `json:"heartbeat_interval"`
	}
	wLease struct {
		Job   hopper.Job
		Token string
	}
	wFetch struct {
		Leases      []wLease
		Quiet, Stop bool
	}
	wBeat struct {
		Cancel      []hopper.ID
		Lost        []string
		Quiet, Stop bool
	}
	wDone struct{ Jobs []hopper.Finished }
)

func enqueueAs(t *testing.T, s *apiServer, body string) hopper.ID {
	t.Helper()
	var res struct{ ID hopper.ID }
	must(t, s, wAdmin, "POST", "/api/v1/jobs", body, http.StatusCreated, &res)
	return res.ID
}

func getJob(t *testing.T, s *apiServer, id hopper.ID) hopper.Job {
	t.Helper()
	var j hopper.Job
	must(t, s, wAdmin, "GET", fmt.Sprintf("/api/v1/jobs/%d", id), "", http.StatusOK, &j)
	return j
}

// jobLine waits for the server's log line of job id's transition (msg
// "job completed", "job rescued", …).
func jobLine(t *testing.T, s *apiServer, id hopper.ID, what string) {
	t.Helper()
	s.log.waitLine(t, time.Minute, `msg="job `+what+`"`, fmt.Sprintf(" job=%d ", id))
}

func TestWorkerProtocolConformance(t *testing.T) {
	t.Parallel()
	_, s := serveWorkers(t)
	var w, w2 wWorkerView
	must(t, s, wWorker, "POST", "/api/v1/workers", `{"kinds":["echo","slow"],"slots":8,"name":"conformance"}`, http.StatusCreated, &w)
	must(t, s, wOther, "POST", "/api/v1/workers", `{"kinds":["echo"],"slots":8}`, http.StatusCreated, &w2)
	base := "/api/v1/workers/" + w.ID
	fetch := func(body string) wFetch {
		var f wFetch
		must(t, s, wWorker, "POST", base+"/fetch", body, http.StatusOK, &f)
		return f
	}
	if f := fetch(`{"max":8}`); len(f.Leases) != 0 {
		t.Fatalf("fetched %d jobs from an empty database", len(f.Leases))
	}
	// A long poll answers with the job enqueued while it waits (or, if
	// the enqueue comes first, at once).
	polled := make(chan wFetch, 1)
	go func() {
		var f wFetch
		call(t, s, wWorker, "POST", base+"/fetch", `{"max":8,"wait":"30s"}`, &f)
		polled <- f
	}()
	id := enqueueAs(t, s, `{"kind":"echo","args":{"n":1},"priority":5}`)
	f := <-polled
	if len(f.Leases) != 1 || f.Leases[0].Job.ID != id || f.Leases[0].Job.Worker != w.ID {
		t.Fatalf("long poll: %+v", f)
	}
	tok := f.Leases[0].Token
	var hb wBeat
	must(t, s, wWorker, "POST", base+"/heartbeat", `{"tokens":["`+tok+`"]}`, http.StatusOK, &hb)
	if len(hb.Lost)+len(hb.Cancel) != 0 {
		t.Fatalf("heartbeat: %+v", hb)
	}
	// Another worker's token is foreign: 409, and the job still runs.
	must(t, s, wOther, "POST", "/api/v1/workers/"+w2.ID+"/complete", `{"token":"`+tok+`"}`, http.StatusConflict, nil)
	must(t, s, wOther, "POST", base+"/complete", `{"token":"`+tok+`"}`, http.StatusNotFound, nil) // not its worker
	if j := getJob(t, s, id); j.State != hopper.StateRunning {
		t.Fatalf("after foreign completions the job is %s", j.State)
	}
	var done wDone
	must(t, s, wWorker, "POST", base+"/complete", `{"token":"`+tok+`","result":[1,2]}`, http.StatusOK, &done)
	must(t, s, wWorker, "POST", base+"/complete", `{"token":"`+tok+`","result":3}`, http.StatusConflict, nil)
	if j := getJob(t, s, id); j.State != hopper.StateCompleted || string(j.Result) != "[1,2]" {
		t.Fatalf("completed job: %s %s", j.State, j.Result)
	}
	// Priorities hold: of two jobs, the more urgent comes first.
	low := enqueueAs(t, s, `{"kind":"echo","priority":9}`)
	high := enqueueAs(t, s, `{"kind":"echo","priority":-9}`)
	if f := fetch(`{"max":1}`); f.Leases[0].Job.ID != high {
		t.Fatalf("fetched %d first, want %d", f.Leases[0].Job.ID, high)
	} else {
		must(t, s, wWorker, "POST", base+"/fail", `{"token":"`+f.Leases[0].Token+`","error":"try later","retry_after":"1h"}`, http.StatusOK, &done)
		if done.Jobs[0].State != hopper.StateRetrying {
			t.Fatalf("fail: %+v", done)
		}
	}
	f = fetch(`{"max":1}`)
	must(t, s, wWorker, "POST", base+"/fail", `{"token":"`+f.Leases[0].Token+`","error":"bad","permanent":true}`, http.StatusOK, &done)
	if f.Leases[0].Job.ID != low || done.Jobs[0].State != hopper.StateDead {
		t.Fatalf("permanent failure of %d: %+v", low, done)
	}
	// A cancel is delivered by the next heartbeat.
	slow := enqueueAs(t, s, `{"kind":"slow"}`)
	f = fetch(`{"max":1}`)
	must(t, s, wAdmin, "POST", fmt.Sprintf("/api/v1/jobs/%d/cancel", slow), "", http.StatusOK, nil)
	must(t, s, wWorker, "POST", base+"/heartbeat", `{"tokens":["`+f.Leases[0].Token+`"]}`, http.StatusOK, &hb)
	if len(hb.Cancel) != 1 || hb.Cancel[0] != slow {
		t.Fatalf("heartbeat after a cancel: %+v", hb)
	}
	must(t, s, wWorker, "POST", base+"/fail", `{"token":"`+f.Leases[0].Token+`","error":"cancelled"}`, http.StatusOK, &done)
	if done.Jobs[0].State != hopper.StateCancelled {
		t.Fatalf("cancelled job: %+v", done)
	}
	// A lease not renewed expires: the job is rescued and leased again;
	// the late completion of the first lease is refused.
	lost := enqueueAs(t, s, `{"kind":"echo"}`)
	f = fetch(`{"max":1}`)
	jobLine(t, s, lost, "rescued")
	must(t, s, wWorker, "POST", base+"/heartbeat", `{"tokens":["`+f.Leases[0].Token+`"]}`, http.StatusOK, &hb)
	if len(hb.Lost) != 1 {
		t.Fatalf("heartbeat of a rescued job: %+v", hb)
	}
	again := fetch(`{"max":1,"wait":"5s"}`)
	if len(again.Leases) != 1 || again.Leases[0].Job.ID != lost || again.Leases[0].Job.Attempt != 2 {
		t.Fatalf("the rescued job leased again: %+v", again)
	}
	must(t, s, wWorker, "POST", base+"/complete", `{"token":"`+f.Leases[0].Token+`"}`, http.StatusConflict, nil)
	must(t, s, wWorker, "POST", base+"/complete/batch", `{"completions":[{"token":"`+again.Leases[0].Token+`"}]}`, http.StatusOK, &done)
	// Scopes: a worker token reads nothing; a limited one works its queue.
	must(t, s, wWorker, "GET", "/api/v1/jobs", "", http.StatusForbidden, nil)
	must(t, s, wWorker, "POST", "/api/v1/jobs", `{"kind":"echo"}`, http.StatusForbidden, nil)
	must(t, s, wMail, "POST", "/api/v1/workers", `{"kinds":["echo"],"slots":1,"queues":["billing"]}`, http.StatusForbidden, nil)
	// The built-in kinds are the server's: no remote worker takes them.
	must(t, s, wWorker, "POST", "/api/v1/workers", `{"kinds":["exec"],"slots":1}`, http.StatusBadRequest, nil)
	// Remote workers are listed among the servers.
	var svs struct{ Servers []hopper.ServerInfo }
	must(t, s, wAdmin, "GET", "/api/v1/servers", "", http.StatusOK, &svs)
	remote := 0
	for _, sv := range svs.Servers {
		if sv.Remote && sv.Alive {
			remote++
		}
	}
	if remote != 2 {
		t.Fatalf("%d remote workers among the servers, want 2: %+v", remote, svs.Servers)
	}
	// Quiet: the fetch answers at once, with none.
	must(t, s, wAdmin, "POST", base+"/quiet", "", http.StatusOK, nil)
	enqueueAs(t, s, `{"kind":"echo"}`)
	if f := fetch(`{"max":1,"wait":"30s"}`); len(f.Leases) != 0 || !f.Quiet {
		t.Fatalf("fetch of a quiet worker: %+v", f)
	}
}

// client is a reference client: the interpreter and the example worker.
type client struct{ name, interp, script string }

var clients = []client{
	{"python", "python3", "../../clients/python/example_worker.py"},
	{"node", "node", "../../clients/typescript/example-worker.mjs"},
}

// need returns the interpreter's path, or skips the test with one line
// (fails under CI, whose .ci/run installs them).
func (c client) need(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath(c.interp)
	if err == nil && c.interp == "node" {
		out, _ := exec.Command(p, "-p", "process.versions.node.split('.')[0]").Output()
		if n, _ := strconv.Atoi(strings.TrimSpace(string(out))); n < 20 {
			err = fmt.Errorf("node %s is older than 20", bytes.TrimSpace(out))
		}
	}
	if err != nil {
		msg := fmt.Sprintf("no %s for the %s reference client (%v): apt-get install python3 nodejs", c.interp, c.name, err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// start runs the example worker of c against s; its output goes to a
// watcher.
func (c client) start(t *testing.T, interp string, s *apiServer, dir string, n int) (*exec.Cmd, *watcher) {
	t.Helper()
	log, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.log", c.name, n)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	w := newWatcher(log)
	cmd := exec.Command(interp, c.script, "--url", s.url, "--slots", "4", "--wait", "5")
	cmd.Env = append(os.Environ(), "HOPPER_TOKEN="+wWorker)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	w.waitLine(t, time.Minute, "registered as remote:")
	return cmd, w
}

// TestWorkerClients drives each reference client's example worker as a
// real process: jobs completed, retried, dead-lettered, cancelled while
// they run, rescued after the process exits under one and after a kill -9,
// and a graceful stop.
func TestWorkerClients(t *testing.T) {
	t.Parallel()
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			interp := c.need(t)
			h, s := serveWorkers(t)
			cmd, out := c.start(t, interp, s, h.logs, 1)
			echo := enqueueAs(t, s, `{"kind":"echo","args":{"to":"ada"}}`)
			flaky := enqueueAs(t, s, `{"kind":"flaky"}`)
			reject := enqueueAs(t, s, `{"kind":"reject","args":"x"}`)
			slow := enqueueAs(t, s, `{"kind":"slow","args":{"seconds":600}}`)
			snoozed := enqueueAs(t, s, `{"kind":"snooze","key":"tenant=1"}`)
			jobLine(t, s, echo, "completed")
			jobLine(t, s, flaky, "completed")
			jobLine(t, s, reject, "dead")
			if j := getJob(t, s, echo); string(j.Result) != `{"echo":{"to":"ada"},"attempt":1}` {
				t.Errorf("echo result %s", j.Result)
			}
			var echoOut struct{ Log struct{ Text string } }
			must(t, s, wAdmin, "GET", fmt.Sprintf("/api/v1/jobs/%d/output", echo), "", http.StatusOK, &echoOut)
			if echoOut.Log.Text != "echoing\n" {
				t.Errorf("echo's log %q, want the handler's line", echoOut.Log.Text)
			}
			if j := getJob(t, s, flaky); j.Attempt != 3 {
				t.Errorf("flaky completed at attempt %d, want 3", j.Attempt)
			}
			if j := getJob(t, s, reject); !strings.Contains(j.LastError, "rejected") {
				t.Errorf("reject: last error %q", j.LastError)
			}
			// A snooze: the handler runs again, the attempt not counted; the
			// snoozed run's log is kept with its attempt.
			jobLine(t, s, snoozed, "completed")
			if j := getJob(t, s, snoozed); j.Attempt != 1 || len(j.Attempts) != 2 || j.Attempts[0].Outcome != "snoozed" ||
				j.Attempts[0].Error != "key held for 200ms: 429 Too Many Requests" {
				t.Errorf("snoozed job: attempt %d, history %+v", j.Attempt, j.Attempts)
			}
			// Cancel the running slow job: the handler learns it at the
			// next heartbeat and the job ends cancelled.
			out.waitLine(t, time.Minute, fmt.Sprintf("started slow job %d", slow))
			must(t, s, wAdmin, "POST", fmt.Sprintf("/api/v1/jobs/%d/cancel", slow), "", http.StatusOK, nil)
			jobLine(t, s, slow, "cancelled")
			// kill: the crash kind ends the process under its job; the
			// job is rescued when its lease expires, and the next worker
			// completes it.
			crash := enqueueAs(t, s, `{"kind":"crash"}`)
			if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 3 {
				t.Fatalf("the crashing worker exited with %v", err)
			}
			jobLine(t, s, crash, "rescued")
			cmd, out = c.start(t, interp, s, h.logs, 2)
			jobLine(t, s, crash, "completed")
			if j := getJob(t, s, crash); j.Attempt != 2 || len(j.Attempts) != 2 || j.Attempts[0].Outcome != "interrupted" {
				t.Errorf("rescued job: attempt %d, history %+v", j.Attempt, j.Attempts)
			}
			// kill -9 under a running job: it is rescued when its lease
			// expires and the next worker runs it to the end.
			killed := enqueueAs(t, s, `{"kind":"slow","args":{"seconds":1}}`)
			out.waitLine(t, time.Minute, fmt.Sprintf("started slow job %d", killed))
			cmd.Process.Kill()
			cmd.Wait()
			jobLine(t, s, killed, "rescued")
			cmd, out = c.start(t, interp, s, h.logs, 3)
			jobLine(t, s, killed, "completed")
			// SIGTERM: the running job finishes, then the worker leaves.
			last := enqueueAs(t, s, `{"kind":"slow","args":{"seconds":1}}`)
			out.waitLine(t, time.Minute, fmt.Sprintf("started slow job %d", last))
			cmd.Process.Signal(syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("the worker stopped with %v", err)
			}
			if j := getJob(t, s, last); j.State != hopper.StateCompleted {
				t.Errorf("the job running at SIGTERM is %s", j.State)
			}
			s.log.waitLine(t, time.Minute, "remote worker deregistered")
		})
	}
}
