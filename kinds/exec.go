package kinds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hopperq/hopper"
)

// KindExec is the kind of jobs that run a command.
const KindExec = "exec"

// TailSize is how many bytes of a command's output (the last ones) and of an
// HTTP response body (the first ones) a result keeps.
const TailSize = 4 << 10

// errTailSize is how much of stderr an exec error message carries.
const errTailSize = 1 << 10

// ExecArgs are the args of an exec job: a command run directly (no shell).
//
// The command runs in a process group of its own. When the job's context is
// done (its timeout, ExecArgs.Timeout, a cancellation or a forced shutdown)
// the whole group is killed with SIGKILL, so children the command started
// die with it; processes the command left behind in its group when it exits
// are killed too.
type ExecArgs struct {
	// Command is the program: a path, or a name looked up in PATH.
	Command string `json:"command"`
	// Args are the program's arguments (without the program name).
	Args []string `json:"args,omitempty"`
	// Env adds "KEY=VALUE" variables to the worker's environment.
	Env []string `json:"env,omitempty"`
	// Dir is the working directory (default: the worker's).
	Dir string `json:"dir,omitempty"`
	// Timeout kills the command after this long (0: only the job's own
	// timeout applies). A timeout fails the attempt; it is retried.
	Timeout Duration `json:"timeout,omitempty"`
	// PermanentExitCodes are exit codes that fail the job permanently: it
	// goes to the dead-letter queue without further attempts. Any other
	// non-zero exit code fails the attempt and is retried.
	PermanentExitCodes []int `json:"permanent_exit_codes,omitempty"`
}

// ExecResult is the result of a successful exec job.
type ExecResult struct {
	ExitCode   int      `json:"exit_code"`
	Duration   Duration `json:"duration"`
	StdoutTail string   `json:"stdout_tail"` // the last TailSize bytes
	StderrTail string   `json:"stderr_tail"` // the last TailSize bytes
}

// Validate reports what is wrong with a, if anything.
func (a *ExecArgs) Validate() error {
	if strings.TrimSpace(a.Command) == "" {
		return errors.New("exec: command must not be empty")
	}
	for _, e := range a.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("exec: env %q: want KEY=VALUE", e)
		}
	}
	if a.Timeout < 0 {
		return fmt.Errorf("exec: timeout must not be negative, got %s", a.Timeout)
	}
	return nil
}

// errExecTimeout is the cause of a context ended by ExecArgs.Timeout.
var errExecTimeout = errors.New("exec timeout")

// Exec runs a command as described by a. It is the handler of KindExec.
func Exec(ctx context.Context, a ExecArgs) (*ExecResult, error) {
	if err := a.Validate(); err != nil {
		return nil, hopper.Permanent(err)
	}
	if a.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.Timeout.D(), errExecTimeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, a.Command, a.Args...)
	cmd.Env = append(os.Environ(), a.Env...)
	cmd.Dir = a.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = 2 * time.Second

	// The output goes through pipes of our own rather than exec's copying
	// goroutines, so that Wait returns when the command exits even if a
	// process it started still holds them; that process is then killed.
	var stdout, stderr tailBuffer
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("exec: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	start := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, startError(a.Command, err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { io.Copy(&stdout, outR) })
	wg.Go(func() { io.Copy(&stderr, errR) })
	waitErr := cmd.Wait()
	dur := time.Since(start)
	// Kill whatever the command left running in its group; the pipes
	// close when the last holder dies.
	killGroup(cmd.Process.Pid)
	copied := make(chan struct{})
	go func() { wg.Wait(); close(copied) }()
	select {
	case <-copied:
	case <-time.After(2 * time.Second): // a process escaped the group and holds a pipe
		outR.Close()
		errR.Close()
		<-copied
	}
	outR.Close()
	errR.Close()

	res := &ExecResult{Duration: Duration(dur), StdoutTail: stdout.String(), StderrTail: stderr.String()}
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		if errors.Is(cause, errExecTimeout) {
			return nil, fmt.Errorf("exec %s: timed out after %s: process group killed%s", a.Command, a.Timeout, errTail(res.StderrTail))
		}
		return nil, fmt.Errorf("exec %s: killed (%v)%s", a.Command, cause, errTail(res.StderrTail))
	}
	if waitErr != nil {
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) {
			return nil, fmt.Errorf("exec %s: %w", a.Command, waitErr)
		}
		res.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return nil, fmt.Errorf("exec %s: killed by signal %s%s", a.Command, ws.Signal(), errTail(res.StderrTail))
		}
		err := fmt.Errorf("exec %s: exit code %d%s", a.Command, res.ExitCode, errTail(res.StderrTail))
		if slices.Contains(a.PermanentExitCodes, res.ExitCode) {
			return nil, hopper.Permanent(err)
		}
		return nil, err
	}
	return res, nil
}

// killGroup sends SIGKILL to process group pgid; a group already gone is
// not an error.
func killGroup(pgid int) error {
	if pgid <= 0 {
		return os.ErrProcessDone
	}
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// startError classifies a failure to start the command: one that running
// again cannot fix (not found, not executable, bad directory) is permanent.
func startError(command string, err error) error {
	err = fmt.Errorf("exec %s: cannot start: %w", command, err)
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) ||
		errors.Is(err, syscall.ENOEXEC) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, exec.ErrDot) {
		return hopper.Permanent(err)
	}
	return err
}

// errTail formats the end of stderr for an error message.
func errTail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if len(s) > errTailSize {
		s = "…" + strings.ToValidUTF8(s[len(s)-errTailSize:], "")
	}
	return ": " + s
}

// tailBuffer keeps the last TailSize bytes written to it.
type tailBuffer struct {
	buf   []byte
	total int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	t.total += int64(n)
	if len(p) >= TailSize {
		t.buf = append(t.buf[:0], p[len(p)-TailSize:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - TailSize; over > 0 {
		t.buf = t.buf[:copy(t.buf, t.buf[over:])]
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns the tail as valid UTF-8 (a character cut at the start is
// dropped).
func (t *tailBuffer) String() string { return strings.ToValidUTF8(string(t.buf), "") }
