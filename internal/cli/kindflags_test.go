package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/kinds"
)

// TestServeOfferUsage: a bad --kinds, --exec-allow, --exec-user or
// --exec-env is a usage error naming the flag, and serve creates nothing.
func TestServeOfferUsage(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--kinds", ""}, []string{"bad --kinds", "--workers 0"}},
		{[]string{"serve", "--kinds", "exec,shell"}, []string{"bad --kinds", `unknown kind "shell"`}},
		{[]string{"serve", "--exec-allow", "bin/backup.sh"}, []string{"bad --exec-allow", "not an absolute path"}},
		{[]string{"serve", "--exec-allow", "/opt/[jobs"}, []string{"bad --exec-allow", "not a valid pattern"}},
		{[]string{"serve", "--exec-allow", ""}, []string{"bad --exec-allow", "empty", "--kinds"}},
		{[]string{"serve", "--exec-env", "HOPPER_TOKENS"}, []string{"bad --exec-env", "HOPPER_TOKENS", "never passed"}},
		{[]string{"serve", "--exec-env", "PATH,hopper_db"}, []string{"bad --exec-env", "hopper_db"}},
		{[]string{"serve", "--exec-user", "hopper-no-such-user"}, []string{"bad --exec-user", "no user"}},
		{[]string{"serve", "--exec-user", ""}, []string{"bad --exec-user", "empty"}},
		{[]string{"serve", "--kinds", "http", "--exec-user", "nobody"}, []string{"--exec-user applies to exec jobs", "leaves exec out"}},
		{[]string{"serve", "--kinds", "http", "--exec-allow", "/bin/true"}, []string{"--exec-allow applies to exec jobs"}},
	} {
		hop(t, db, tc.args...).fails(t, ExitUsage, tc.want...)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a refused serve created the database: %v", err)
	}
}

// TestExecAllowEnv: with $HOPPER_EXEC_ALLOW set, enqueue exec, schedule
// add and enqueue --bulk refuse a program outside it (a usage error
// saying why) and enqueue one inside; a bad value is a usage error naming
// the variable. (It sets the environment, so it does not run in
// parallel.)
func TestExecAllowEnv(t *testing.T) {
	echo, err := exec.LookPath("echo")
	if err != nil {
		t.Skip(err)
	}
	echo, _ = filepath.Abs(echo)
	db := newDB(t)
	hop(t, db, "migrate").ok(t)
	t.Setenv(ExecAllowEnv, " "+echo+", /opt/hopper-test/* ")
	hop(t, db, "enqueue", "exec", "--", "sh", "-c", "true").fails(t, ExitUsage, "invalid job", `command "sh" is /`, "not in the exec allow-list")
	hop(t, db, "schedule", "add", "s", "--every", "1m", "exec", "--", "/bin/sh", "-c", "true").fails(t, ExitUsage, "not in the exec allow-list")
	hopIn(t, db, `{"kind":"exec","args":{"command":"echo","args":["ok"]}}`+"\n"+`{"kind":"exec","args":{"command":"sh"}}`+"\n", "enqueue", "--bulk").
		fails(t, ExitUsage, "line 2", "not in the exec allow-list")
	if n := hop(t, db, "jobs", "count").ok(t).out; n != "0\n" {
		t.Fatalf("refused input enqueued %s jobs", strings.TrimSpace(n))
	}
	id := hop(t, db, "enqueue", "exec", "--", "echo", "hi").ok(t).id(t)
	if j := work(t, db, id)[0]; j.State != hopper.StateCompleted {
		t.Fatalf("echo, allowed: %s %s", j.State, j.LastError)
	}

	t.Setenv(ExecAllowEnv, "bin/echo")
	hop(t, db, "enqueue", "exec", "--", "echo", "hi").fails(t, ExitUsage, "bad $"+ExecAllowEnv, "not an absolute path")
}

// TestServeExecNeedsUnix: where exec jobs cannot run (kinds.ExecSupported
// false, Windows), --kinds defaults to http and offering exec is a usage
// error naming the system; where they can, both are the default.
func TestServeExecNeedsUnix(t *testing.T) {
	t.Parallel()
	if got := defaultKinds(true); got != "exec,http" {
		t.Errorf("defaultKinds(true) = %q; want exec,http", got)
	}
	if got := defaultKinds(false); got != "http" {
		t.Errorf("defaultKinds(false) = %q; want http", got)
	}
	for _, ks := range [][]string{{"exec"}, {"http", "exec"}} {
		err := checkExecSupported(kinds.Options{Kinds: ks}, false, "windows")
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "bad --kinds "+strings.Join(ks, ",")+": the exec kind is not supported on windows") {
			t.Errorf("--kinds %v on windows: %v; want a usage error saying exec is not supported on windows", ks, err)
		}
		if err := checkExecSupported(kinds.Options{Kinds: ks}, true, "linux"); err != nil {
			t.Errorf("--kinds %v on linux: %v; want no error", ks, err)
		}
	}
	if err := checkExecSupported(kinds.Options{Kinds: []string{"http"}}, false, "windows"); err != nil {
		t.Errorf("--kinds http on windows: %v; want no error", err)
	}
}

// TestDemoNeedsUnix: where exec jobs cannot run, hopper demo, whose jobs
// are commands, refuses to start, naming the system; where they can, it
// runs.
func TestDemoNeedsUnix(t *testing.T) {
	t.Parallel()
	if err := demoSupported(true, "linux"); err != nil {
		t.Errorf("demo on linux: %v; want no error", err)
	}
	err := demoSupported(false, "windows")
	if err == nil || !strings.Contains(err.Error(), "hopper demo runs shell commands (exec jobs), which are not supported on windows") {
		t.Errorf("demo on windows: %v; want an error saying exec jobs are not supported on windows", err)
	}
}
