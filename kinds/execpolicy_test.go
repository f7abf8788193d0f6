//go:build linux

package kinds

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/store/memstore"
)

// TestExecAllowMatching checks which commands an allow-list lets run: the
// path a command resolves to (in PATH, or from Dir), cleaned, matched with
// path.Match, where * does not cross "/"; symbolic links are not followed.
func TestExecAllowMatching(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"bin/tool", "bin/sub/deep", "jobs/a.sh"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "notexec"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "bin", "tool"), filepath.Join(dir, "jobs", "link")); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	pathList := "relative/dir::" + bin // only absolute entries count
	for _, tc := range []struct {
		allow    []string
		command  string
		cmdDir   string
		resolved string // "" when the command is not found
		allowed  bool
	}{
		{[]string{bin + "/tool"}, bin + "/tool", "", bin + "/tool", true},
		{[]string{bin + "/tool"}, "tool", "", bin + "/tool", true},                     // found in PATH
		{[]string{bin + "/tool"}, "./tool", bin, bin + "/tool", true},                  // relative to dir
		{[]string{bin + "/tool"}, "../bin/./tool", bin, bin + "/tool", true},           // cleaned
		{[]string{bin + "//tool/"}, bin + "/tool", "", bin + "/tool", true},            // the pattern is cleaned too
		{[]string{bin + "/tool"}, bin + "/sub/../tool", "", bin + "/tool", true},       // cleaned
		{[]string{bin + "/*"}, bin + "/sub/deep", "", bin + "/sub/deep", false},        // * stops at /
		{[]string{bin + "/*/*"}, bin + "/sub/deep", "", bin + "/sub/deep", true},       //
		{[]string{bin + "/t??l"}, "tool", "", bin + "/tool", true},                     //
		{[]string{dir + "/jobs/*"}, dir + "/jobs/link", "", dir + "/jobs/link", true},  // a link is matched by its own path
		{[]string{bin + "/tool"}, dir + "/jobs/link", "", dir + "/jobs/link", false},   // not by its target
		{[]string{dir + "/jobs/*"}, "a.sh", "", "", false},                             // not in PATH
		{[]string{bin + "/*"}, "notexec", "", "", false},                               // not executable: not found
		{[]string{"/usr/bin/env", bin + "/tool"}, "tool", "", bin + "/tool", true},     // any entry
		{[]string{bin + "/tool"}, bin + "/tool2", "", bin + "/tool2", false},           // no prefix match
		{[]string{bin + "/[a-s]*"}, "tool", "", bin + "/tool", false},                  // a character class
		{nil, "sub/deep", bin, bin + "/sub/deep", true},                                // no list: anything
		{[]string{bin + "/sub/deep"}, "sub/deep", "", mustAbs(t, "sub/deep"), false},   // relative to the working directory
		{[]string{bin + "/tool"}, "tool", "relative/dir/ignored", bin + "/tool", true}, // a name ignores dir
		{[]string{bin + "/tool"}, "./sub/../tool", bin + "/x/..", bin + "/tool", true}, //
	} {
		r := &execRunner{}
		for _, p := range tc.allow {
			clean, err := checkPattern(p)
			if err != nil {
				t.Fatal(err)
			}
			r.allow = append(r.allow, clean)
		}
		resolved, err := commandPath(tc.command, tc.cmdDir, pathList)
		if tc.resolved == "" {
			if !errors.Is(err, exec.ErrNotFound) {
				t.Errorf("commandPath(%q): %q, %v; want not found", tc.command, resolved, err)
			}
		} else if err != nil || resolved != tc.resolved {
			t.Errorf("commandPath(%q, dir %q) = %q, %v; want %q", tc.command, tc.cmdDir, resolved, err, tc.resolved)
			continue
		}
		if tc.resolved != "" {
			if got := r.allow == nil || r.allowed(resolved); got != tc.allowed {
				t.Errorf("allow %q, command %q (%s): allowed %v, want %v", tc.allow, tc.command, resolved, got, tc.allowed)
			}
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestExecPolicyInvalid checks that Validate and RegisterWith refuse a bad
// policy with a *hopper.FieldError naming the field, registering nothing.
func TestExecPolicyInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o     Options
		field string
		want  string
	}{
		{Options{Kinds: []string{}}, "Options.Kinds", "empty"},
		{Options{Kinds: []string{"exec", "shell"}}, "Options.Kinds", `unknown kind "shell"`},
		{Options{Exec: ExecPolicy{Allow: []string{"bin/tool"}}}, "Options.Exec.Allow", "not an absolute path"},
		{Options{Exec: ExecPolicy{Allow: []string{"/opt/[jobs"}}}, "Options.Exec.Allow", "not a valid pattern"},
		{Options{Exec: ExecPolicy{Allow: []string{" "}}}, "Options.Exec.Allow", "empty entry"},
		{Options{Exec: ExecPolicy{PassEnv: []string{"HOPPER_TOKENS"}}}, "Options.Exec.PassEnv", "HOPPER_*"},
		{Options{Exec: ExecPolicy{PassEnv: []string{"hopper_db"}}}, "Options.Exec.PassEnv", "HOPPER_*"},
		{Options{Exec: ExecPolicy{PassEnv: []string{"A=B"}}}, "Options.Exec.PassEnv", "not a variable name"},
		{Options{Exec: ExecPolicy{User: "hopper-no-such-user"}}, "Options.Exec.User", "no user"},
	} {
		err := tc.o.Validate()
		var fe *hopper.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Reason, tc.want) {
			t.Errorf("Validate(%+v): %v, want a FieldError on %s saying %q", tc.o, err, tc.field, tc.want)
		}
		w := hopper.NewWorkers()
		if err := RegisterWith(w, tc.o); err == nil || len(w.Kinds()) != 0 {
			t.Errorf("RegisterWith(%+v): %v, registered %v; want the error and nothing", tc.o, err, w.Kinds())
		}
	}
	// A policy for a kind not offered does not apply.
	if err := (Options{Kinds: []string{KindHTTP}, Exec: ExecPolicy{Allow: []string{"relative"}}}).Validate(); err != nil {
		t.Errorf("a bad exec policy without exec: %v", err)
	}
}

// TestExecUserNeedsRoot: a process that is not root may name only its own
// user.
func TestExecUserNeedsRoot(t *testing.T) {
	t.Parallel()
	if _, _, err := lookupExecUser("nobody", 1000); err == nil || !strings.Contains(err.Error(), "only root") {
		t.Errorf("nobody from uid 1000: %v, want an error saying only root can", err)
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody:", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	cred, env, err := lookupExecUser(nobody.Uid, uid) // by ID, as that user
	if err != nil || cred != nil || !slices.Contains(env, "HOME="+nobody.HomeDir) || !slices.Contains(env, "USER="+nobody.Username) {
		t.Errorf("nobody as nobody: %+v %q %v, want no change of user and nobody's HOME and USER", cred, env, err)
	}
}

// TestExecAsRoot: as root, commands run as root unless the policy names
// another user or exec is not offered.
func TestExecAsRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		if (Options{}).ExecAsRoot() {
			t.Error("ExecAsRoot is true in a process that is not root")
		}
		return
	}
	for _, tc := range []struct {
		o    Options
		want bool
	}{
		{Options{}, true},
		{Options{Exec: ExecPolicy{User: "root"}}, true},
		{Options{Exec: ExecPolicy{User: "0"}}, true},
		{Options{Exec: ExecPolicy{User: "nobody"}}, false},
		{Options{Kinds: []string{KindHTTP}}, false},
		{Options{Exec: ExecPolicy{User: "hopper-no-such-user"}}, false},
	} {
		if got := tc.o.ExecAsRoot(); got != tc.want {
			t.Errorf("ExecAsRoot(%+v) = %v, want %v", tc.o, got, tc.want)
		}
	}
}

// TestExecEnv checks the environment a command gets: the base variables
// of the process (PATH, or the default), those passed through, the exec
// user's HOME/USER/LOGNAME, then the job's; nothing else.
func TestExecEnv(t *testing.T) {
	t.Parallel()
	environ := []string{
		"PATH=/custom/bin", "HOME=/root", "USER=root", "LOGNAME=root", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC", "TMPDIR=/var/tmp",
		"HOPPER_TOKENS=admin:secret", "HOPPER_DB=postgres://u:pw@h/db", "AWS_SECRET_ACCESS_KEY=x", "SHELL=/bin/bash", "PASSME=1", "EMPTY=",
	}
	for _, tc := range []struct {
		name    string
		r       *execRunner
		environ []string
		extra   []string
		want    []string
	}{
		{"default", &execRunner{}, environ, nil,
			[]string{"PATH=/custom/bin", "HOME=/root", "USER=root", "LOGNAME=root", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC", "TMPDIR=/var/tmp"}},
		{"no PATH", &execRunner{}, []string{"HOME=/h"}, nil, []string{"PATH=" + DefaultExecPath, "HOME=/h"}},
		{"empty PATH", &execRunner{}, []string{"PATH="}, nil, []string{"PATH=" + DefaultExecPath}},
		{"pass-through and the job's", &execRunner{pass: []string{"PASSME", "EMPTY", "UNSET", "PASS"}}, environ, []string{"TZ=Europe/Paris", "JOB=1"},
			[]string{"PATH=/custom/bin", "HOME=/root", "USER=root", "LOGNAME=root", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC", "TMPDIR=/var/tmp", "PASSME=1", "EMPTY=", "TZ=Europe/Paris", "JOB=1"}},
		{"exec user", &execRunner{userEnv: []string{"HOME=/nonexistent", "USER=nobody", "LOGNAME=nobody"}}, environ, nil,
			[]string{"PATH=/custom/bin", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC", "TMPDIR=/var/tmp", "HOME=/nonexistent", "USER=nobody", "LOGNAME=nobody"}},
		{"supervisor", nil, environ, nil,
			[]string{"PATH=/custom/bin", "HOME=/root", "USER=root", "LOGNAME=root", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC", "TMPDIR=/var/tmp"}},
	} {
		if got := tc.r.envFrom(tc.environ, tc.extra); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestExecCleanEnvironment runs env in each mode: the command sees none of
// this process's other variables (TestMain set secretEnv), and the job's
// own.
func TestExecCleanEnvironment(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m execMode) {
		res, err := m.exec(context.Background(), ExecArgs{Command: "env", Env: []string{"JOB_VAR=1"}})
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSpace(res.StdoutTail), "\n")
		if slices.ContainsFunc(got, func(kv string) bool { return strings.HasPrefix(kv, secretEnv+"=") }) || !slices.Contains(got, "JOB_VAR=1") {
			t.Fatalf("the command's environment: %q; want no %s, and JOB_VAR", got, secretEnv)
		}
		for _, kv := range got {
			if name, _, _ := strings.Cut(kv, "="); name != "PATH" && name != "JOB_VAR" && !isBaseEnv(name) {
				t.Errorf("the command got %s, which is not in the clean environment", kv)
			}
		}
	})
}

// TestExecSupervisorEnvironment: the supervisor process itself is started
// with the clean environment, not this process's.
func TestExecSupervisorEnvironment(t *testing.T) {
	t.Parallel()
	res, err := execModes[0].exec(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c", `tr '\0' '\n' < /proc/$PPID/environ`}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.StdoutTail, secretEnv) || !strings.Contains(res.StdoutTail, "PATH=") {
		t.Fatalf("the supervisor's environment:\n%s\nwant the clean one, without %s", res.StdoutTail, secretEnv)
	}
}

// TestExecPolicyAtRun checks the allow-list when a job runs, in each mode:
// a command outside it fails permanently, saying why, without starting;
// one inside runs.
func TestExecPolicyAtRun(t *testing.T) {
	t.Parallel()
	echo, err := commandPath("echo", "", execPATH())
	if err != nil {
		t.Skip(err)
	}
	r := &execRunner{allow: []string{echo}}
	forModes(t, func(t *testing.T, m execMode) {
		res, err := r.run(context.Background(), ExecArgs{Command: "echo", Args: []string{"hi"}}, m.supervised)
		if err != nil || res.StdoutTail != "hi\n" {
			t.Fatalf("echo, allowed: %+v, %v", res, err)
		}
		dir := t.TempDir()
		marker := filepath.Join(dir, "ran")
		res, err = r.run(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c", "touch " + marker}}, m.supervised)
		if res != nil || !errors.Is(err, ErrExecNotAllowed) || !hopper.IsPermanent(err) || !strings.Contains(err.Error(), `command "sh" is /`) {
			t.Fatalf("sh, not allowed: %+v, %v; want a permanent ErrExecNotAllowed naming the path", res, err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the command ran")
		}
	})
}

// TestRegisterWithPolicy runs the policy through a client: Enqueue,
// AddSchedule and Options.ValidateArgs refuse a command outside the
// allow-list (a FieldError on args matching ErrExecNotAllowed), storing
// nothing; a job another client stored dies saying why; a kind left out
// of Options.Kinds is unknown.
func TestRegisterWithPolicy(t *testing.T) {
	t.Parallel()
	echo, err := commandPath("echo", "", execPATH())
	if err != nil {
		t.Skip(err)
	}
	o := Options{Exec: ExecPolicy{Allow: []string{echo}}}
	st := memstore.New()
	ws := hopper.NewWorkers()
	if err := RegisterWith(ws, o); err != nil {
		t.Fatal(err)
	}
	c, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sh := ExecArgs{Command: "sh", Args: []string{"-c", "true"}}
	var fe *hopper.FieldError
	if _, err := c.Enqueue(ctx, KindExec, sh, nil); !errors.As(err, &fe) || fe.Field != "args" || !errors.Is(err, ErrExecNotAllowed) {
		t.Errorf("Enqueue(sh): %v, want a FieldError on args matching ErrExecNotAllowed", err)
	}
	if _, err := c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Minute, Kind: KindExec, Args: sh}); !errors.Is(err, ErrExecNotAllowed) {
		t.Errorf("AddSchedule(sh): %v, want ErrExecNotAllowed", err)
	}
	raw, _ := json.Marshal(sh)
	if err := o.ValidateArgs(KindExec, raw); !errors.Is(err, ErrExecNotAllowed) || !strings.HasPrefix(err.Error(), "exec: bad args: ") {
		t.Errorf("ValidateArgs(sh): %v, want ErrExecNotAllowed", err)
	}
	if err := o.ValidateArgs(KindExec, json.RawMessage(`{"command":"hopper-no-such-command"}`)); !errors.Is(err, ErrExecNotAllowed) || !strings.Contains(err.Error(), "not in PATH") {
		t.Errorf("ValidateArgs(a command not in PATH): %v, want ErrExecNotAllowed saying so", err)
	}
	if err := o.ValidateArgs(KindExec, json.RawMessage(`{"command":"echo"}`)); err != nil {
		t.Errorf("ValidateArgs(echo): %v", err)
	}
	if err := ValidateArgs(KindExec, raw); err != nil {
		t.Errorf("ValidateArgs(sh) without a policy: %v", err)
	}
	if err := (Options{Kinds: []string{KindHTTP}}).ValidateArgs(KindExec, json.RawMessage(`{"command":"echo"}`)); err == nil || !strings.Contains(err.Error(), "not offered") {
		t.Errorf("ValidateArgs(exec) with http only: %v, want an error", err)
	}
	if n, _ := c.Count(ctx, hopper.ListOptions{}); n != 0 {
		t.Fatalf("%d jobs stored after refused enqueues", n)
	}
	if _, err := c.Enqueue(ctx, KindExec, ExecArgs{Command: "echo"}, nil); err != nil {
		t.Errorf("Enqueue(echo): %v", err)
	}

	producer, err := hopper.NewClient(hopper.Config{Store: st}) // no policy
	if err != nil {
		t.Fatal(err)
	}
	stored, err := producer.Enqueue(ctx, KindExec, sh, &hopper.EnqueueOptions{MaxAttempts: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	j, err := c.Wait(wctx, stored.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != hopper.StateDead || j.Attempt != 1 || !strings.Contains(j.LastError, "not in the exec allow-list") {
		t.Fatalf("a stored job outside the allow-list: %s after %d attempts, %q; want dead after 1, saying why", j.State, j.Attempt, j.LastError)
	}

	httpOnly := hopper.NewWorkers()
	if err := RegisterWith(httpOnly, Options{Kinds: []string{KindHTTP}}); err != nil {
		t.Fatal(err)
	}
	if got := httpOnly.Kinds(); !slices.Equal(got, []string{KindHTTP}) {
		t.Fatalf("Kinds http: registered %q", got)
	}
	if err := httpOnly.CheckArgs(KindExec, json.RawMessage(`{"command":"echo"}`)); !errors.Is(err, hopper.ErrUnknownKind) {
		t.Errorf("exec with http only: %v, want ErrUnknownKind", err)
	}
}

// TestExecUserCredentials runs commands as another user (this test runs
// as root), in each mode: they get its user and group IDs, its groups and
// HOME, and cannot read a file only root may read.
func TestExecUserCredentials(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("changing user needs root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody:", err)
	}
	r, err := (&ExecPolicy{User: "nobody"}).runner()
	if err != nil {
		t.Fatal(err)
	}
	if r.cred == nil || strconv.Itoa(int(r.cred.Uid)) != nobody.Uid {
		t.Fatalf("credentials %+v for nobody (uid %s)", r.cred, nobody.Uid)
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
	gids, _ := nobody.GroupIds()
	forModes(t, func(t *testing.T, m execMode) {
		res, err := r.run(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c", `id -u; id -g; id -G; echo "$HOME $USER $LOGNAME"`}}, m.supervised)
		if err != nil {
			t.Fatal(err)
		}
		want := nobody.Uid + "\n" + nobody.Gid + "\n" + strings.Join(gids, " ") + "\n" + nobody.HomeDir + " nobody nobody\n"
		if res.StdoutTail != want {
			t.Fatalf("as nobody: %q, want %q", res.StdoutTail, want)
		}
		res, err = r.run(context.Background(), ExecArgs{Command: "cat", Args: []string{secret}}, m.supervised)
		if err == nil || strings.Contains(res.StdoutTail, "root only") || !strings.Contains(res.StderrTail, "Permission denied") {
			t.Fatalf("cat of a root-only file as nobody: %+v, %v; want permission denied", res, err)
		}
	})
}
