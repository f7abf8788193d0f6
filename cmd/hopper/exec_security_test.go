package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/cli"
	"github.com/hopperq/hopper/kinds"
)

// The black-box tests of what exec jobs may reach (docs/security.md, "Exec
// jobs: what a command can reach"): a real hopper serve --http, jobs
// enqueued through its API.

// adminToken is the API token of the servers of these tests.
const adminToken = "exec-security-test-admin-token-0123456789"

// apiServer is a hopper serve with --http, and its API's base URL.
type apiServer struct {
	*server
	url string
}

var servingURL = regexp.MustCompile(`http=(http://\S+)`)

// newSecurityHop returns a hop on a fresh database whose commands get
// HOPPER_TOKENS (adminToken) and no exec allow-list.
func newSecurityHop(t *testing.T) *hop {
	dir := t.TempDir()
	c := newHop(t, dir)
	c.env = []string{"HOPPER_TOKENS=admin:" + adminToken, cli.ExecAllowEnv + "="}
	return c
}

// serveHTTP starts hopper serve --http on a free loopback port with flags
// and waits until it serves; the test's end kills it if it still runs.
func (c *hop) serveHTTP(flags ...string) *apiServer {
	c.t.Helper()
	s := c.serve(2, append([]string{"--http", "127.0.0.1:0"}, flags...)...)
	c.t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			s.cmd.Wait()
		}
	})
	line := s.log.waitLine(c.t, time.Minute, `msg="hopper serving"`)
	m := servingURL.FindStringSubmatch(line)
	if m == nil {
		c.t.Fatalf("no address in %q", line)
	}
	return &apiServer{server: s, url: m[1]}
}

// apiError is the error body of the API.
type apiError struct {
	Error struct {
		Code, Field, Message string
	}
}

// enqueue posts body to /api/v1/jobs with the admin token and returns the
// status, the new job's ID (0 if none) and the error (if any).
func (s *apiServer) enqueue(t *testing.T, body string) (int, hopper.ID, apiError) {
	t.Helper()
	req, err := http.NewRequest("POST", s.url+"/api/v1/jobs", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var ok struct{ ID hopper.ID }
	var e apiError
	json.Unmarshal(b, &ok)
	json.Unmarshal(b, &e)
	return resp.StatusCode, ok.ID, e
}

// mustEnqueue enqueues body and returns the job's ID, failing the test
// unless the API answers 201.
func (s *apiServer) mustEnqueue(t *testing.T, body string) hopper.ID {
	t.Helper()
	status, id, e := s.enqueue(t, body)
	if status != http.StatusCreated || id == 0 {
		t.Fatalf("POST /api/v1/jobs %s: %d %+v, want 201", body, status, e)
	}
	return id
}

// finished waits until the server's log says job id completed or died,
// and returns the job.
func (c *hop) finished(s *apiServer, id hopper.ID) *hopper.Job {
	c.t.Helper()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	jobAttr := fmt.Sprintf("job=%d ", id)
	for {
		done, changed := s.log.find(`msg="job completed"`, jobAttr)
		if done == "" {
			done, _ = s.log.find(`msg="job dead"`, jobAttr)
		}
		if done != "" {
			return c.job(id)
		}
		select {
		case <-changed:
		case <-timer.C:
			c.t.Fatalf("timed out waiting for job %d to finish; logs in %s", id, c.logs)
		}
	}
}

// stdout is the stdout_tail of an exec job's result.
func stdout(t *testing.T, j *hopper.Job) string {
	t.Helper()
	var r kinds.ExecResult
	if err := json.Unmarshal(j.Result, &r); err != nil {
		t.Fatalf("job %d (%s, %q): result %s: %v", j.ID, j.State, j.LastError, j.Result, err)
	}
	return r.StdoutTail
}

// execBody is the JSON of an exec job running command with args, one
// attempt only.
func execBody(command string, args ...string) string {
	b, _ := json.Marshal(map[string]any{"kind": "exec", "args": kinds.ExecArgs{Command: command, Args: args}, "max_attempts": 1})
	return string(b)
}

// TestServeExecEnvironment: an exec job's command, and its
// supervisor, see none of the server's variables — not its tokens, not
// its database URL, not any other — but the ones --exec-env passes.
func TestServeExecEnvironment(t *testing.T) {
	t.Parallel()
	c := newSecurityHop(t)
	c.env = append(c.env, "HOPPER_DB=postgres://hopper:db-password-42@db.invalid/hopper", "SERVER_SECRET=server-secret-42", "PASSME=visible-42")
	s := c.serveHTTP("--exec-env", "PASSME")
	id := s.mustEnqueue(t, execBody("sh", "-c", `env; echo ---; tr '\0' '\n' < /proc/$PPID/environ`))
	j := c.finished(s, id)
	out := stdout(t, j)
	cmdEnv, supervisorEnv, _ := strings.Cut(out, "---\n")
	for _, secret := range []string{"HOPPER_", adminToken, "db-password-42", "server-secret-42"} {
		if strings.Contains(out, secret) {
			t.Errorf("the job's output holds %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(cmdEnv, "PASSME=visible-42\n") {
		t.Errorf("the command lacks PASSME, passed with --exec-env:\n%s", cmdEnv)
	}
	if !strings.Contains(supervisorEnv, "PATH=") || strings.Contains(supervisorEnv, "PASSME") {
		t.Errorf("the supervisor's environment is not the clean base:\n%s", supervisorEnv)
	}
	c.stop(s.server)
}

// TestServeExecAllow: with --exec-allow, the API refuses a program outside
// the list (400 naming args), the CLI refuses it with $HOPPER_EXEC_ALLOW
// (a usage error), a job stored before the list fails permanently saying
// why, without running, and a program in the list runs.
func TestServeExecAllow(t *testing.T) {
	t.Parallel()
	echo, err := exec.LookPath("echo")
	if err != nil {
		t.Skip(err)
	}
	echo, _ = filepath.Abs(echo)
	c := newSecurityHop(t)
	marker := filepath.Join(t.TempDir(), "ran")
	storedID, err := strconv.ParseInt(strings.TrimSpace(c.run("", "enqueue", "--max-attempts", "5", "exec", "--", "sh", "-c", "touch "+marker)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}

	s := c.serveHTTP("--exec-allow", echo+",/opt/hopper-test-jobs/*")
	j := c.finished(s, hopper.ID(storedID))
	if j.State != hopper.StateDead || j.Attempt != 1 || !strings.Contains(j.LastError, `command "sh" is /`) || !strings.Contains(j.LastError, "not in the exec allow-list (hopper serve --exec-allow") {
		t.Errorf("a job stored before the allow-list: %s after %d attempts, %q; want dead after 1, saying why", j.State, j.Attempt, j.LastError)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the job outside the allow-list ran: %v", err)
	}

	status, _, e := s.enqueue(t, execBody("sh", "-c", "true"))
	if status != http.StatusBadRequest || e.Error.Field != "args" || !strings.Contains(e.Error.Message, "not in the exec allow-list") {
		t.Errorf("POST sh: %d %+v, want 400 on args saying it is not in the allow-list", status, e)
	}
	if j := c.finished(s, s.mustEnqueue(t, execBody("echo", "allowed"))); j.State != hopper.StateCompleted || stdout(t, j) != "allowed\n" {
		t.Errorf("echo, in the allow-list: %s %q", j.State, j.LastError)
	}
	c.stop(s.server)

	c.env = append(c.env, cli.ExecAllowEnv+"="+echo)
	cmd := exec.Command(c.bin, "--db", c.db, "enqueue", "exec", "--", "sh", "-c", "true")
	cmd.Env = append(os.Environ(), c.env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "not in the exec allow-list") {
		t.Errorf("hopper enqueue exec -- sh with $HOPPER_EXEC_ALLOW: %v\n%s\nwant a usage error (exit 2) saying why", err, out)
	}
}

// TestServeExecUser: with --exec-user nobody, commands run as nobody (this
// test runs as root): they cannot read a file only root may read, and
// serve gives no warning about root.
func TestServeExecUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("--exec-user needs root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody:", err)
	}
	dir, err := os.MkdirTemp("", "hopper-exec-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // nobody may look in, not read the file
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("root only"), 0o600); err != nil {
		t.Fatal(err)
	}

	c := newSecurityHop(t)
	s := c.serveHTTP("--exec-user", "nobody")
	if j := c.finished(s, s.mustEnqueue(t, execBody("id", "-u"))); j.State != hopper.StateCompleted || stdout(t, j) != nobody.Uid+"\n" {
		t.Errorf("id -u: %s %q, result %s; want nobody's uid %s", j.State, j.LastError, j.Result, nobody.Uid)
	}
	j := c.finished(s, s.mustEnqueue(t, execBody("cat", secret)))
	if j.State != hopper.StateDead || !strings.Contains(j.LastError, "Permission denied") || strings.Contains(string(j.Result), "root only") {
		t.Errorf("cat of a root-only file: %s %q, result %s; want permission denied", j.State, j.LastError, j.Result)
	}
	if l, _ := s.log.find("exec jobs run as root"); l != "" {
		t.Errorf("a warning about root with --exec-user: %s", l)
	}
	c.stop(s.server)
}

// TestServeKindsHTTPOnly: with --kinds http, the API refuses exec jobs
// (400 naming kind) and takes http ones.
func TestServeKindsHTTPOnly(t *testing.T) {
	t.Parallel()
	c := newSecurityHop(t)
	s := c.serveHTTP("--kinds", "http")
	status, _, e := s.enqueue(t, execBody("true"))
	if status != http.StatusBadRequest || e.Error.Field != "kind" {
		t.Errorf("POST exec with --kinds http: %d %+v, want 400 on kind", status, e)
	}
	s.mustEnqueue(t, `{"kind":"http","args":{"url":"https://example.com/"},"delay":"1h"}`) // never run: delayed
	if l, _ := s.log.find(`msg="hopper serving"`, "kinds=http "); l == "" {
		t.Errorf("the serving line does not say kinds=http: %q", s.log.all())
	}
	c.stop(s.server)
}

// TestServeWarnsExecAsRoot: serving exec over HTTP as root without
// --exec-user logs a warning naming the risk and the flag.
func TestServeWarnsExecAsRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the warning is for root")
	}
	c := newSecurityHop(t)
	s := c.serveHTTP()
	s.log.waitLine(t, time.Minute, "level=WARN", "exec jobs run as root", "--exec-user NAME")
	c.stop(s.server)
}

// TestServeExecDescriptors: an exec job's command and its supervisor
// hold none of the server's descriptors — not its database, its lock
// files or its listening socket, nor a file that serve inherited from
// whoever started it.
func TestServeExecDescriptors(t *testing.T) {
	t.Parallel()
	c := newSecurityHop(t)
	inherited := filepath.Join(t.TempDir(), "inherited-by-serve")
	f, err := os.Create(inherited)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c.files = []*os.File{f, f} // fds 3 and 4: 3 is also the supervisor's status pipe, which replaces it there
	s := c.serveHTTP()
	id := s.mustEnqueue(t, execBody("sh", "-c", `for p in /proc/self/fd/* /proc/$PPID/fd/*; do echo "$p -> $(readlink "$p")"; done`))
	out := stdout(t, c.finished(s, id))
	if !strings.Contains(out, "/proc/self/fd/1 -> pipe:") {
		t.Fatalf("no descriptors listed:\n%s", out)
	}
	for _, held := range []string{inherited, c.db, ".lock", "socket:"} {
		if strings.Contains(out, held) {
			t.Errorf("the command or its supervisor holds %q:\n%s", held, out)
		}
	}
	c.stop(s.server)
}
