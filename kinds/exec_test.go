//go:build linux

package kinds

import (
	"context"
	"encoding/json"
	"github.com/hopperq/hopper/internal/proctest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// execMode is a way Exec starts commands: under a supervisor (the test
// binary, as TestMain called Supervise) or directly.
type execMode struct {
	name       string
	supervised bool
}

var execModes = []execMode{{"supervised", true}, {"direct", false}}

func (m execMode) exec(ctx context.Context, a ExecArgs) (*ExecResult, error) {
	return defaultExec.run(ctx, a, m.supervised)
}

// forModes runs f as a parallel subtest in each execMode.
func forModes(t *testing.T, f func(t *testing.T, m execMode)) {
	t.Helper()
	for _, m := range execModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			f(t, m)
		})
	}
}

func TestExecSuccess(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m execMode) {
		res, err := m.exec(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c", "echo hello; echo warn >&2"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 0 || res.Signal != "" || res.StdoutTail != "hello\n" || res.StderrTail != "warn\n" || res.Duration <= 0 {
			t.Fatalf("got %+v", res)
		}
	})
}

// TestExecStdin checks that ExecArgs.Stdin is the command's standard
// input, exactly, that a command reading none gets the null device, and
// that a command that leaves its input unread ends as usual.
func TestExecStdin(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", MaxExecStdin/16) // more than a pipe holds
	forModes(t, func(t *testing.T, m execMode) {
		for _, tc := range []struct {
			name, stdin, script, want string
		}{
			{"lines", "first\nsecond %\n\x00third", "cat", "first\nsecond %\n\x00third"},
			{"none", "", "cat; echo end", "end\n"},
			{"big", big, "wc -c", strconv.Itoa(len(big)) + "\n"},
			{"unread", big, "echo ignored", "ignored\n"},
			{"half read", big, "head -c 3", "012"},
		} {
			res, err := m.exec(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c", tc.script}, Stdin: tc.stdin})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got := strings.TrimLeft(res.StdoutTail, " "); got != tc.want {
				t.Errorf("%s: stdout %q, want %q", tc.name, got, tc.want)
			}
		}
	})
}

// TestExecUsesSupervisor checks that Exec starts commands under a
// supervisor once Supervise was called (TestMain did), and runExec without
// one directly.
func TestExecUsesSupervisor(t *testing.T) {
	t.Parallel()
	a := ExecArgs{Command: "sh", Args: []string{"-c", `echo $PPID`}}
	for _, tc := range []struct {
		name   string
		exec   func(context.Context, ExecArgs) (*ExecResult, error)
		direct bool
	}{
		{"Exec", Exec, false},
		{"direct", execModes[1].exec, true},
	} {
		res, err := tc.exec(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		ppid, err := strconv.Atoi(strings.TrimSpace(res.StdoutTail))
		if err != nil {
			t.Fatalf("%s: %q", tc.name, res.StdoutTail)
		}
		if direct := ppid == os.Getpid(); direct != tc.direct {
			t.Errorf("%s: the command's parent is %d, the test is %d: want direct=%v", tc.name, ppid, os.Getpid(), tc.direct)
		}
	}
}

// TestExecArgsExact checks that argv, environment and directory reach the
// command byte for byte, through the supervisor too.
func TestExecArgsExact(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m execMode) {
		dir, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		script := filepath.Join(dir, "show")
		proctest.WriteExecutable(t, script, []byte("#!/bin/sh\nprintf '<%s>' \"$0\" \"$@\" \"$HOPPER_TEST_A\" \"$HOPPER_TEST_B\"; pwd -P\n"))
		args := []string{"", "two words", "line\nbreak", "é ✓", "--", "x=y"}
		res, err := m.exec(context.Background(), ExecArgs{
			Command: "./show", Args: args, Dir: dir,
			Env: []string{"HOPPER_TEST_A=1", "HOPPER_TEST_B=x=y", "HOPPER_TEST_A=last wins"},
		})
		if err != nil {
			t.Fatal(err)
		}
		// A script's $0 is the path the kernel ran: the absolute path the
		// command resolved to, the one an allow-list checks.
		want := "<" + script + "><><two words><line\nbreak><é ✓><--><x=y><last wins><x=y>" + dir + "\n"
		if res.StdoutTail != want {
			t.Fatalf("stdout %q, want %q", res.StdoutTail, want)
		}
	})
}

// TestExecFailureKeepsResult checks that a failed run returns its result
// (exit code, duration, both tails) with a short error.
func TestExecFailureKeepsResult(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m execMode) {
		res, err := m.exec(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c",
			"echo out; echo first >&2; echo 'last line' >&2; exit 3"}})
		if err == nil || hopper.IsPermanent(err) {
			t.Fatalf("want a retryable error, got %v", err)
		}
		if got, want := err.Error(), "exec sh: exit code 3: last line"; got != want {
			t.Errorf("error %q, want %q", got, want)
		}
		if res == nil {
			t.Fatal("no result with the error")
		}
		if res.ExitCode != 3 || res.Signal != "" || res.StdoutTail != "out\n" || res.StderrTail != "first\nlast line\n" || res.Duration <= 0 {
			t.Fatalf("result %+v", res)
		}

		// A long last line: the error keeps its end, the result all of
		// the tail.
		res, err = m.exec(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c",
			`i=0; while [ $i -lt 1000 ]; do printf 0123456789 >&2; i=$((i+1)); done; echo END >&2; exit 1`}})
		if err == nil || res == nil {
			t.Fatalf("want an error and a result, got %v, %v", err, res)
		}
		if msg := err.Error(); len(msg) > 250 || !strings.HasSuffix(msg, "0123456789END") || !strings.Contains(msg, "exit code 1: …") {
			t.Errorf("error of %d bytes: %q", len(msg), msg)
		}
		if len(res.StderrTail) != TailSize || !strings.HasSuffix(res.StderrTail, "789END\n") {
			t.Errorf("stderr tail of %d bytes ending %q", len(res.StderrTail), res.StderrTail[max(0, len(res.StderrTail)-10):])
		}
	})
}

func TestExecPermanentExitCodes(t *testing.T) {
	t.Parallel()
	a := ExecArgs{Command: "sh", Args: []string{"-c", "echo bad usage >&2; exit 64"}, PermanentExitCodes: []int{2, 64}}
	res, err := Exec(context.Background(), a)
	if !hopper.IsPermanent(err) || !strings.Contains(err.Error(), "exit code 64: bad usage") {
		t.Fatalf("want permanent exit code 64, got %v", err)
	}
	if res == nil || res.ExitCode != 64 || res.StderrTail != "bad usage\n" {
		t.Fatalf("result %+v", res)
	}
	a.Args = []string{"-c", "exit 65"}
	if _, err := Exec(context.Background(), a); err == nil || hopper.IsPermanent(err) {
		t.Fatalf("exit 65 is not listed: want retryable, got %v", err)
	}
}

// TestExecSignal checks that a command killed by a signal is reported as
// such, through the supervisor too (which dies of the same signal, also of
// one the Go runtime handles, such as SIGSEGV).
func TestExecSignal(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m execMode) {
		for _, sig := range []string{"TERM", "SEGV", "PIPE", "INT", "KILL"} {
			res, err := m.exec(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c", "echo bye >&2; kill -" + sig + " $$"}})
			want := "exec sh: killed by signal SIG" + sig + ": bye"
			if err == nil || err.Error() != want || hopper.IsPermanent(err) {
				t.Errorf("SIG%s: error %v, want %q", sig, err, want)
			}
			if res == nil || res.Signal != "SIG"+sig || res.ExitCode != -1 || res.StderrTail != "bye\n" {
				t.Errorf("SIG%s: result %+v", sig, res)
			}
		}
	})
}

func TestExecCannotStartIsPermanent(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m execMode) {
		dir := t.TempDir()
		noExec := filepath.Join(dir, "noexec")
		if err := os.WriteFile(noExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, a := range []ExecArgs{
			{Command: "hopper-no-such-command"},
			{Command: "/nonexistent/bin/x"},
			{Command: noExec},
			{Command: dir},
			{Command: "true", Dir: filepath.Join(dir, "missing")},
			{Command: "true", Dir: noExec},
			{},
			{Command: "true", Env: []string{"NOEQUALS"}},
		} {
			res, err := m.exec(context.Background(), a)
			if !hopper.IsPermanent(err) || res != nil {
				t.Errorf("%+v: want a permanent error and no result, got %v, %+v", a, err, res)
			}
		}
	})
}

func TestExecStdoutTail(t *testing.T) {
	t.Parallel()
	res, err := Exec(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c",
		`i=0; while [ $i -lt 3000 ]; do echo "line $i"; i=$((i+1)); done`}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.StdoutTail) != TailSize || !strings.HasSuffix(res.StdoutTail, "line 2999\n") {
		t.Fatalf("tail of %d bytes ending %q", len(res.StdoutTail), res.StdoutTail[max(0, len(res.StdoutTail)-20):])
	}
}

// TestExecOutputNotUTF8 checks how output that is not UTF-8 is kept: each
// bad run replaced by U+FFFD, and a character cut by the tail's start
// dropped.
func TestExecOutputNotUTF8(t *testing.T) {
	t.Parallel()
	res, err := Exec(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c",
		`printf 'a\377\376b\n'; i=0; while [ $i -lt 3000 ]; do printf 'é' >&2; i=$((i+1)); done; printf x >&2`}})
	if err != nil {
		t.Fatal(err)
	}
	if res.StdoutTail != "a\uFFFDb\n" {
		t.Errorf("stdout %q", res.StdoutTail)
	}
	// 6001 bytes of stderr: the tail starts inside an "é".
	if want := strings.Repeat("é", (TailSize-2)/2) + "x"; res.StderrTail != want {
		t.Errorf("stderr tail of %d bytes starts %q, want %d bytes", len(res.StderrTail), res.StderrTail[:4], len(want))
	}
}

func TestTailBuffer(t *testing.T) {
	t.Parallel()
	var b tailBuffer
	for i := range 1000 {
		b.Write([]byte(strconv.Itoa(i%10) + "abc"))
	}
	if len(b.buf) != 4000 {
		t.Fatalf("len %d", len(b.buf))
	}
	b.Write(make([]byte, 5000))
	if len(b.buf) != TailSize || b.total != 9000 {
		t.Fatalf("len %d total %d", len(b.buf), b.total)
	}
}

func TestExecArgsValidate(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", MaxExecArgSize+1)
	for _, tc := range []struct {
		a    ExecArgs
		want string // in the error; "" for none
	}{
		{ExecArgs{Command: "true"}, ""},
		{ExecArgs{Command: "true", Args: []string{"é", ""}, Env: []string{"A=é"}, Dir: "/tmp/é", PermanentExitCodes: []int{1, 255}}, ""},
		{ExecArgs{Command: "true", Args: make([]string, MaxExecArgs)}, ""},
		{ExecArgs{Command: "true", Args: []string{strings.Repeat("x", MaxExecArgSize)}}, ""},
		{ExecArgs{Command: " "}, "command must not be empty"},
		{ExecArgs{Command: "tr\xffue"}, "command is not valid UTF-8 (byte 2 is 0xff)"},
		{ExecArgs{Command: "true", Args: []string{"ok", "b\xe9"}}, "args[1] is not valid UTF-8"},
		{ExecArgs{Command: "true", Env: []string{"A=1", "B=\xc3"}}, "env[1] is not valid UTF-8"},
		{ExecArgs{Command: "true", Dir: "/tmp/\x80"}, "dir is not valid UTF-8"},
		{ExecArgs{Command: "true", Args: []string{"a\x00b"}}, "args[0] holds a NUL byte"},
		{ExecArgs{Command: "true", Env: []string{"A=\x00"}}, "env[0] holds a NUL byte"},
		{ExecArgs{Command: "tr\x00ue"}, "command holds a NUL byte"},
		{ExecArgs{Command: "true", Args: make([]string, MaxExecArgs+1)}, "4097 args, more than the limit of 4096"},
		{ExecArgs{Command: "true", Env: make([]string, MaxExecEnv+1)}, "1025 env variables, more than the limit of 1024"},
		{ExecArgs{Command: "true", Args: []string{"x", long}}, "args[1] is 131072 bytes, more than the limit of 131071"},
		{ExecArgs{Command: "true", Env: []string{"A=" + long}}, "env[0] is 131074 bytes"},
		{ExecArgs{Command: "/" + strings.Repeat("x", MaxExecPathSize)}, "command is 4096 bytes"},
		{ExecArgs{Command: "true", Dir: "/" + strings.Repeat("x", MaxExecPathSize)}, "dir is 4096 bytes"},
		{ExecArgs{Command: "true", Env: []string{"=1"}}, `env[0] "=1": want KEY=VALUE`},
		{ExecArgs{Command: "true", Timeout: -1}, "timeout must not be negative"},
		{ExecArgs{Command: "true", PermanentExitCodes: []int{2, 0}}, "permanent_exit_codes: 0 is not the exit code of a failure (want 1 to 255)"},
		{ExecArgs{Command: "true", PermanentExitCodes: []int{256}}, "permanent_exit_codes: 256"},
		{ExecArgs{Command: "true", PermanentExitCodes: []int{-1}}, "permanent_exit_codes: -1"},
		{ExecArgs{Command: "true", Stdin: "a\x00b\n" + strings.Repeat("x", MaxExecStdin-4)}, ""},
		{ExecArgs{Command: "true", Stdin: "a\xffb"}, "stdin is not valid UTF-8"},
		{ExecArgs{Command: "true", Stdin: strings.Repeat("x", MaxExecStdin+1)}, "stdin is 65537 bytes, more than the limit of 65536"},
	} {
		err := tc.a.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%.60q: %v", tc.a.Command+" "+strings.Join(tc.a.Args, " "), err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "exec: ")):
			t.Errorf("%.60q: error %.200v, want %q", tc.a.Command+" "+strings.Join(tc.a.Args, " "), err, tc.want)
		}
	}
}

// TestValidateArgsRefusesNonUTF8 checks that JSON args holding bytes that
// are not UTF-8, which decoding would silently replace, are refused with the
// field named.
func TestValidateArgsRefusesNonUTF8(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ kind, raw, field string }{
		{KindExec, "{\"command\":\"r\xffm\"}", "command"},
		{KindExec, "{\"command\":\"rm\",\"args\":[\"-f\",\"caf\xe9\"]}", "args[1]"},
		{KindExec, "{\"command\":\"rm\",\"env\":[\"A=\xc3\"]}", "env[0]"},
		{KindExec, "{\"command\":\"rm\",\"dir\":\"/\x80\"}", "dir"},
		{KindHTTP, "{\"url\":\"http://x/\xff\"}", "url"},
		{KindHTTP, "{\"url\":\"http://x/\",\"headers\":{\"A\":\"b\",\"X-T\":\"\xfe\"}}", "headers.X-T"},
		{KindHTTP, "{\"url\":\"http://x/\",\"headers\":{\"X\xfe\":\"v\"}}", "headers.X\uFFFD (a key)"},
		{KindHTTP, "{\"url\":\"http://x/\",\"body\":\"\x89PNG\"}", "body"},
	} {
		err := ValidateArgs(tc.kind, []byte(tc.raw))
		if err == nil || !strings.Contains(err.Error(), ": "+tc.field+" is not valid UTF-8") {
			t.Errorf("%q: error %v, want one naming %s", tc.raw, err, tc.field)
		}
	}
}

// checkDead fails unless every pid in pidFile (want of them) has died,
// waiting on their pidfds for 10s at most in all.
func checkDead(t *testing.T, pidFile string, want int) {
	t.Helper()
	proctest.WaitGone(t, proctest.ReadPids(t, pidFile, want), 10*time.Second, "sleep", "sh")
}

// groupScript starts two background sleeps, writes their pids and its own to
// pidFile, signals on fifo (if set) and waits.
func groupScript(pidFile, fifo string) []string {
	s := `sleep 1000 & echo $! > "$1"; sleep 1000 & echo $! >> "$1"; echo $$ >> "$1"`
	if fifo != "" {
		s += `; echo ready > "$2"`
	}
	return []string{"-c", s + "; wait", "sh", pidFile, fifo}
}

func TestExecTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m execMode) {
		pids := filepath.Join(t.TempDir(), "pids")
		a := ExecArgs{Command: "sh", Args: groupScript(pids, ""), Timeout: Duration(time.Second)}
		a.Args[1] = "echo started; echo doing >&2; " + a.Args[1]
		start := time.Now()
		res, err := m.exec(context.Background(), a)
		if err == nil || hopper.IsPermanent(err) || err.Error() != "exec sh: timed out after 1s: process group killed: doing" {
			t.Fatalf("want a retryable timeout, got %v", err)
		}
		if res == nil || res.Signal != "SIGKILL" || res.StdoutTail != "started\n" || res.Duration <= 0 {
			t.Fatalf("result %+v", res)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("took %s", d)
		}
		checkDead(t, pids, 3)
	})
}

func TestExecCancelKillsProcessGroup(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m execMode) {
		dir := t.TempDir()
		pids, fifo := filepath.Join(dir, "pids"), filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		type outcome struct {
			res *ExecResult
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := m.exec(ctx, ExecArgs{Command: "sh", Args: groupScript(pids, fifo)})
			done <- outcome{res, err}
		}()
		// Opening the fifo blocks until the script writes "ready".
		if _, err := os.ReadFile(fifo); err != nil {
			t.Fatal(err)
		}
		cancel()
		o := <-done
		if o.err == nil || !strings.Contains(o.err.Error(), "killed") {
			t.Fatalf("want killed, got %v", o.err)
		}
		if o.res == nil || o.res.Signal != "SIGKILL" {
			t.Fatalf("result %+v", o.res)
		}
		checkDead(t, pids, 3)
	})
}

func TestExecKillsLeftoverProcesses(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, m execMode) {
		pids := filepath.Join(t.TempDir(), "pids")
		start := time.Now()
		res, err := m.exec(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c", `sleep 1000 & echo $! > "$1"; echo done`, "sh", pids}})
		if err != nil {
			t.Fatal(err)
		}
		if res.StdoutTail != "done\n" {
			t.Fatalf("stdout %q", res.StdoutTail)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("waited %s for a leftover process", d)
		}
		checkDead(t, pids, 1)
	})
}

func TestDurationJSON(t *testing.T) {
	t.Parallel()
	var a ExecArgs
	if err := ValidateArgs(KindExec, []byte(`{"command":"x","timeout":"1m30s"}`)); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"command":"x","timeout":2.5}`), &a); err != nil || a.Timeout.D() != 2500*time.Millisecond {
		t.Fatalf("%v %s", err, a.Timeout)
	}
	if err := ValidateArgs(KindExec, []byte(`{"command":"x","timeout":"soon"}`)); err == nil {
		t.Fatal("bad duration accepted")
	}
	if err := ValidateArgs(KindExec, []byte(`{"comand":"x"}`)); err == nil || !strings.Contains(err.Error(), "comand") {
		t.Fatalf("unknown field: %v", err)
	}
	b, _ := Duration(30 * time.Second).MarshalJSON()
	if string(b) != `"30s"` {
		t.Fatalf("marshal: %s", b)
	}
}

// TestSupervisorEndedWording: a supervisor that ended without a word may
// have started the command (it was killed after starting it, before
// reporting): the error never says the command did not start, and says it
// did when the command's output shows it.
func TestSupervisorEndedWording(t *testing.T) {
	t.Parallel()
	killed := &os.SyscallError{Syscall: "wait", Err: syscall.ESRCH} // any wait error
	for _, tc := range []struct {
		res     ExecResult
		ran     bool
		excerpt string
	}{
		{ExecResult{}, false, ""},
		{ExecResult{StdoutTail: "started\n"}, true, ""},
		{ExecResult{StderrTail: "oops\n"}, true, "oops"},
	} {
		msg := supervisorEnded("sh", killed, &tc.res).Error()
		if strings.Contains(msg, "before starting") || !strings.Contains(msg, "before reporting whether it started the command") {
			t.Errorf("output %+v: %q claims to know whether the command started", tc.res, msg)
		}
		if got := strings.Contains(msg, "the command had started"); got != tc.ran {
			t.Errorf("output %+v: %q: says the command had started: %v, want %v", tc.res, msg, got, tc.ran)
		}
		if !strings.Contains(msg, tc.excerpt) {
			t.Errorf("output %+v: %q lacks the stderr excerpt %q", tc.res, msg, tc.excerpt)
		}
	}
}

// TestExecCancelIsGracefulTerminateKills: a cancel (the cause
// hopper.ErrCancelled) sends the command's group SIGTERM, which a command
// may trap to clean up, and SIGKILL after the grace if it ignores it; a
// terminate (hopper.ErrTerminated) sends SIGKILL at once.
func TestExecCancelIsGracefulTerminateKills(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		cause   error
		trap    string // the script's SIGTERM trap
		signal  string // the signal that ended the command ("": it exited)
		cleaned bool   // the trap ran
	}{
		{"cancel", hopper.ErrCancelled, `echo cleaned; exit 143`, "", true},
		{"cancel ignored", hopper.ErrCancelled, ``, "SIGKILL", false},
		{"terminate", hopper.ErrTerminated, `echo cleaned; exit 143`, "SIGKILL", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forModes(t, func(t *testing.T, m execMode) {
				dir := t.TempDir()
				pids, fifo := filepath.Join(dir, "pids"), filepath.Join(dir, "fifo")
				if err := syscall.Mkfifo(fifo, 0o600); err != nil {
					t.Fatal(err)
				}
				script := `trap '` + tc.trap + `' TERM; sleep 1000 & echo $! > "$1"; echo $$ >> "$1"; echo ready > "$2"; wait`
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				type outcome struct {
					res *ExecResult
					err error
				}
				done := make(chan outcome, 1)
				go func() {
					res, err := m.exec(ctx, ExecArgs{Command: "sh", Args: []string{"-c", script, "sh", pids, fifo}})
					done <- outcome{res, err}
				}()
				if _, err := os.ReadFile(fifo); err != nil { // blocks until "ready"
					t.Fatal(err)
				}
				cancel(tc.cause)
				o := <-done
				if o.res == nil || o.res.Signal != tc.signal || strings.Contains(o.res.StdoutTail, "cleaned") != tc.cleaned {
					t.Fatalf("result %+v (%v): want signal %q, cleaned up %v", o.res, o.err, tc.signal, tc.cleaned)
				}
				if o.err == nil || !strings.Contains(o.err.Error(), "killed") {
					t.Errorf("error %v, want killed", o.err)
				}
				checkDead(t, pids, 2)
			})
		})
	}
}
