//go:build linux

package kinds

import (
	"bytes"
	"context"
	"github.com/hopperq/hopper/internal/proctest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// serverScript is the job the helper server runs: two background sleeps
// (grandchildren of a server without supervisor), their pids and the
// shell's written to $1, then "ready" to the fifo $2.
const serverScript = `sleep 1000 & echo $! >> "$1"; sleep 1000 & echo $! >> "$1"; echo $$ >> "$1"; echo ready > "$2"; wait`

// TestExecDiesWithServer kills, with SIGKILL, a server (this test binary
// in helper mode) running an exec job, and checks which of the job's
// processes die with it: all of them when the server called Supervise, the
// command itself (its direct child) otherwise.
func TestExecDiesWithServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode      string
		mustDie   func(sleeps []int, sh, supervisor int) []int
		supervise bool
	}{
		{"supervised", func(sleeps []int, sh, sv int) []int { return append(sleeps, sh, sv) }, true},
		{"direct", func(sleeps []int, sh, sv int) []int { return []int{sh} }, false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidFile, fifo := filepath.Join(dir, "pids"), filepath.Join(dir, "ready")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			server := exec.Command(self, serverScript, "sh", pidFile, fifo)
			server.Env = append(os.Environ(), helperEnv+"="+tc.mode)
			var stderr bytes.Buffer
			server.Stderr = &stderr
			if err := server.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- server.Wait() }()
			defer func() {
				server.Process.Kill()
				<-exited
			}()

			// Opening the fifo blocks until the job opens it to write
			// "ready", or until the helper, having exited, can no longer
			// and this test opens it to unblock the reader.
			ready := make(chan error, 1)
			go func() {
				_, err := os.ReadFile(fifo)
				ready <- err
			}()
			select {
			case err := <-ready:
				if err != nil {
					t.Fatal(err)
				}
			case err := <-exited:
				exited <- err
				if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
					w.Close()
				}
				<-ready
				t.Fatalf("helper server exited before its job was ready: %v\n%s", err, stderr.Bytes())
			}

			var pids []int
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range strings.Fields(string(b)) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					t.Fatal(err)
				}
				pids = append(pids, pid)
			}
			if len(pids) != 3 {
				t.Fatalf("pid file holds %q", b)
			}
			// Hold a pidfd on every process of the job while it is surely
			// alive, so that none can be mistaken for a later process of
			// the same pid; they are killed at the end whatever happens.
			sh := pids[2]
			ppid, pgrp := procParentGroup(t, sh)
			job := pids
			if ppid != server.Process.Pid {
				job = append(job, ppid) // the supervisor
			}
			fds := make(map[int]int)
			defer func() {
				for _, fd := range fds {
					unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
					unix.Close(fd)
				}
			}()
			for _, pid := range job {
				fd, err := unix.PidfdOpen(pid, 0)
				if err != nil {
					t.Fatalf("pidfd_open(%d): %v", pid, err)
				}
				fds[pid] = fd
			}
			if supervised := ppid != server.Process.Pid; supervised != tc.supervise {
				t.Fatalf("the job's parent is %d, the server %d: want supervised=%v", ppid, server.Process.Pid, tc.supervise)
			}
			if want := map[bool]int{true: ppid, false: sh}[tc.supervise]; pgrp != want {
				t.Fatalf("the job's process group is %d, want %d", pgrp, want)
			}

			if err := server.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			exited <- <-exited // again, for the deferred kill

			// The bound is a failure timeout: each wait ends as soon as
			// the process exits.
			deadline := time.Now().Add(10 * time.Second)
			for _, pid := range tc.mustDie(pids[:2], sh, ppid) {
				if !proctest.Exits(t, fds[pid], time.Until(deadline)) {
					t.Errorf("process %d of the job is alive 10s after its server was killed", pid)
				}
			}
		})
	}
}

// procParentGroup returns the parent pid and the process group of pid.
func procParentGroup(t *testing.T, pid int) (ppid, pgrp int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 3 {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	return ppid, pgrp
}

// TestSpecRoundTrip checks that the command a supervisor receives is the
// one sent, byte for byte.
func TestSpecRoundTrip(t *testing.T) {
	t.Parallel()
	for _, cred := range []*syscall.Credential{nil, {Uid: 65534, Gid: 65533}, {Uid: 1, Gid: 2, Groups: []uint32{3, 4294967295}}} {
		in := &exec.Cmd{Path: "/bin/é x", Dir: "", Args: []string{"x", "", "a\nb"}, Env: []string{"A=1", "B="}, SysProcAttr: &syscall.SysProcAttr{Credential: cred}}
		out, err := decodeSpec(encodeSpec(in))
		if err != nil {
			t.Fatal(err)
		}
		if out.Path != in.Path || out.Dir != in.Dir || strings.Join(out.Args, "|") != strings.Join(in.Args, "|") || strings.Join(out.Env, "|") != strings.Join(in.Env, "|") {
			t.Fatalf("got %q %q %q %q", out.Path, out.Dir, out.Args, out.Env)
		}
		got := out.SysProcAttr.Credential
		if (got == nil) != (cred == nil) || got != nil && (got.Uid != cred.Uid || got.Gid != cred.Gid || !slices.Equal(got.Groups, cred.Groups) && len(got.Groups)+len(cred.Groups) > 0) {
			t.Fatalf("credential: sent %+v, got %+v", cred, got)
		}
	}
	for _, bad := range []string{"", "x", "p\x00d\x00\x00", "p\x00d\x00\x002\x00a\x00", "p\x00d\x00\x000\x00", "p\x00d\x001 x \x001\x00a\x00", "p\x00d\x001 2\x001\x00a\x00"} {
		if _, err := decodeSpec([]byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

// TestExecInheritsNoDescriptors: a descriptor that the server inherited
// without close-on-exec (from a shell or a service manager) reaches
// neither a supervised command nor its supervisor: a command run as
// another user would otherwise hold what it opens.
func TestExecInheritsNoDescriptors(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "inherited")
	if err := os.WriteFile(path, []byte("server only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(path, syscall.O_RDONLY, 0) // no O_CLOEXEC: as inherited
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	res, err := execModes[0].exec(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c",
		`for p in /proc/self/fd/* /proc/$PPID/fd/*; do echo "$p -> $(readlink "$p")"; done`}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.StdoutTail, path) {
		t.Fatalf("fd %d (%s), inherited without close-on-exec, reached the command or its supervisor:\n%s", fd, path, res.StdoutTail)
	}
	if !strings.Contains(res.StdoutTail, "/proc/self/fd/1 -> pipe:") {
		t.Fatalf("no descriptors listed:\n%s", res.StdoutTail)
	}
}
