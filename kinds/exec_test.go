package kinds

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

func TestExecSuccess(t *testing.T) {
	t.Parallel()
	res, err := Exec(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c", "echo hello; echo warn >&2"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.StdoutTail != "hello\n" || res.StderrTail != "warn\n" || res.Duration <= 0 {
		t.Fatalf("got %+v", res)
	}
}

func TestExecNonZeroIsRetried(t *testing.T) {
	t.Parallel()
	_, err := Exec(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c", "echo oops >&2; exit 3"}})
	if err == nil || hopper.IsPermanent(err) {
		t.Fatalf("want a retryable error, got %v", err)
	}
	if !strings.Contains(err.Error(), "exit code 3") || !strings.Contains(err.Error(), "oops") {
		t.Fatalf("error lacks exit code or stderr: %v", err)
	}
}

func TestExecPermanentExitCodes(t *testing.T) {
	t.Parallel()
	a := ExecArgs{Command: "sh", Args: []string{"-c", "exit 64"}, PermanentExitCodes: []int{2, 64}}
	_, err := Exec(context.Background(), a)
	if !hopper.IsPermanent(err) || !strings.Contains(err.Error(), "exit code 64") {
		t.Fatalf("want permanent exit code 64, got %v", err)
	}
	a.Args = []string{"-c", "exit 65"}
	if _, err := Exec(context.Background(), a); err == nil || hopper.IsPermanent(err) {
		t.Fatalf("exit 65 is not listed: want retryable, got %v", err)
	}
}

func TestExecNotFoundIsPermanent(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"hopper-no-such-command", "/nonexistent/bin/x"} {
		_, err := Exec(context.Background(), ExecArgs{Command: cmd})
		if !hopper.IsPermanent(err) {
			t.Errorf("%s: want permanent, got %v", cmd, err)
		}
	}
	if _, err := Exec(context.Background(), ExecArgs{}); !hopper.IsPermanent(err) {
		t.Errorf("empty command: want permanent, got %v", err)
	}
	if _, err := Exec(context.Background(), ExecArgs{Command: "true", Env: []string{"NOEQUALS"}}); !hopper.IsPermanent(err) {
		t.Errorf("bad env: want permanent, got %v", err)
	}
}

func TestExecEnvAndDir(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := Exec(context.Background(), ExecArgs{
		Command: "sh", Args: []string{"-c", `echo "$HOPPER_TEST_A-$HOPPER_TEST_B"; pwd -P`},
		Env: []string{"HOPPER_TEST_A=1", "HOPPER_TEST_B=x=y"}, Dir: dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "1-x=y\n" + dir + "\n"; res.StdoutTail != want {
		t.Fatalf("stdout %q, want %q", res.StdoutTail, want)
	}
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

// groupScript starts two background sleeps, writes their pids and its own to
// pidFile, signals on fifo (if set) and waits.
func groupScript(pidFile, fifo string) []string {
	s := `sleep 30 & echo $! > "$1"; sleep 30 & echo $! >> "$1"; echo $$ >> "$1"`
	if fifo != "" {
		s += `; echo ready > "$2"`
	}
	return []string{"-c", s + "; wait", "sh", pidFile, fifo}
}

// checkDead fails unless every pid in pidFile (want of them) has died. A
// process killed with SIGKILL is dead a moment after the kill returns, so
// checkDead waits for its pidfd to report the exit (no polling), then
// expects kill(pid, 0) to answer ESRCH, or the process to be a zombie
// waiting for init to reap it.
func checkDead(t *testing.T, pidFile string, want int) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b))
	if len(fields) != want {
		t.Fatalf("pid file holds %q, want %d pids", b, want)
	}
	for _, f := range fields {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		waitExit(t, pid, 5*time.Second)
		err = syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			continue
		}
		if stat, rerr := os.ReadFile("/proc/" + f + "/stat"); rerr == nil {
			if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
				continue // dead, not yet reaped by its new parent
			}
		}
		t.Errorf("process %d is still alive (kill: %v)", pid, err)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// sysPidfdOpen is pidfd_open(2)'s number on amd64 and arm64 alike.
const sysPidfdOpen = 434

// waitExit blocks until process pid has exited, at most d: a pidfd becomes
// readable when its process terminates.
func waitExit(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno == syscall.ESRCH {
		return
	}
	if errno != 0 {
		t.Logf("pidfd_open(%d): %v; checking without waiting", pid, errno)
		return
	}
	defer syscall.Close(int(fd))
	var set syscall.FdSet
	set.Bits[fd/64] |= 1 << (fd % 64)
	tv := syscall.NsecToTimeval(d.Nanoseconds())
	for {
		n, err := syscall.Select(int(fd)+1, &set, nil, nil, &tv)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n == 0 {
			t.Errorf("process %d did not exit within %s (select: %v)", pid, d, err)
		}
		return
	}
}

func TestExecTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	start := time.Now()
	_, err := Exec(context.Background(), ExecArgs{Command: "sh", Args: groupScript(pids, ""), Timeout: Duration(time.Second)})
	if err == nil || hopper.IsPermanent(err) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("want a retryable timeout, got %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %s", d)
	}
	checkDead(t, pids, 3)
}

func TestExecCancelKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pids, fifo := filepath.Join(dir, "pids"), filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := Exec(ctx, ExecArgs{Command: "sh", Args: groupScript(pids, fifo)})
		errc <- err
	}()
	// Opening the fifo blocks until the script writes "ready".
	if _, err := os.ReadFile(fifo); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("want killed, got %v", err)
	}
	checkDead(t, pids, 3)
}

func TestExecKillsLeftoverProcesses(t *testing.T) {
	t.Parallel()
	pids := filepath.Join(t.TempDir(), "pids")
	start := time.Now()
	res, err := Exec(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c", `sleep 30 & echo $! > "$1"; echo done`, "sh", pids}})
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
}

func TestDurationJSON(t *testing.T) {
	t.Parallel()
	var a ExecArgs
	if err := ValidateArgs(KindExec, []byte(`{"command":"x","timeout":"1m30s"}`)); err != nil {
		t.Fatal(err)
	}
	if err := decodeStrict(KindExec, []byte(`{"command":"x","timeout":2.5}`), &a); err != nil || a.Timeout.D() != 2500*time.Millisecond {
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
