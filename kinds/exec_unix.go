//go:build unix

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
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hopperq/hopper"
)

// How an exec job's command runs on Unix: in a process group of its own,
// killed as a group (see ExecArgs). The supervisor, which makes the group
// die with this process, is Linux's (supervise_linux.go).

// ExecSupported reports whether this system runs exec jobs: true on Unix
// (Linux, macOS, the BSDs), false elsewhere (Windows), where Exec fails
// permanently. hopper serve offers the exec kind only where it is true.
const ExecSupported = true

// execCancelGrace is how long a cancelled command has between SIGTERM
// and SIGKILL (and, whatever ended it, how long Wait waits for its
// output once it exited).
const execCancelGrace = 2 * time.Second

// errExecTimeout is the cause of a context ended by ExecArgs.Timeout.
var errExecTimeout = errors.New("exec timeout")

// run is Exec with r's policy, with or without a supervisor.
func (r *execRunner) run(ctx context.Context, a ExecArgs, supervised bool) (*ExecResult, error) {
	if err := a.Validate(); err != nil {
		return nil, hopper.Permanent(err)
	}
	// The program is found and checked once, and that path runs.
	path, err := r.resolve(&a)
	if errors.Is(err, ErrExecNotAllowed) {
		return nil, hopper.Permanent(err)
	}
	if err != nil {
		return nil, startError(a.Command, err)
	}
	// A bad Dir is reported here: starting would blame the program.
	if a.Dir != "" {
		if fi, err := os.Stat(a.Dir); err != nil || !fi.IsDir() {
			if err == nil {
				err = fmt.Errorf("%s: %w", a.Dir, syscall.ENOTDIR)
			}
			return nil, hopper.Permanent(fmt.Errorf("exec %s: cannot start: dir: %w", a.Command, err))
		}
	}
	if a.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.Timeout.D(), errExecTimeout)
		defer cancel()
	}
	// target is the command: its program, argv (argv[0] as the job gave
	// it), environment, directory and user.
	target := &exec.Cmd{
		Path:        path,
		Args:        append([]string{a.Command}, a.Args...),
		Env:         r.env(a.Env),
		Dir:         a.Dir,
		SysProcAttr: &syscall.SysProcAttr{Credential: r.cred},
	}

	in, err := newStdinPipe(a.Stdin)
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	defer in.close()
	var cmd *exec.Cmd
	var sv *supervisorLink
	if supervised {
		if cmd, sv, err = supervisorCommand(ctx, target, in.r); err != nil {
			return nil, fmt.Errorf("exec %s: %w", a.Command, err)
		}
	} else {
		cmd = exec.CommandContext(ctx, target.Path)
		cmd.Args, cmd.Env, cmd.Dir = target.Args, target.Env, target.Dir
		cmd.Stdin = in.r
		cmd.SysProcAttr = directProcAttr()
		cmd.SysProcAttr.Credential = r.cred
	}
	// A cancel asks the command to stop (SIGTERM to its group) and kills
	// the group execCancelGrace later if it has not exited; a timeout, a
	// terminate (hopper.ErrTerminated) and a shutdown kill at once.
	cmd.Cancel = func() error {
		if graceful(ctx) {
			return signalGroup(cmd.Process.Pid, syscall.SIGTERM)
		}
		return killGroup(cmd.Process.Pid)
	}
	cmd.WaitDelay = execCancelGrace

	// The output goes through pipes of our own rather than exec's copying
	// goroutines, so that Wait returns when the command exits even if a
	// process it started still holds them; that process is then killed.
	var stdout, stderr tailBuffer
	outR, outW, err := os.Pipe()
	if err != nil {
		sv.close()
		return nil, fmt.Errorf("exec: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		sv.close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("exec: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	start := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	sv.started()
	if err != nil {
		sv.close()
		outR.Close()
		errR.Close()
		return nil, startError(a.Command, err)
	}
	in.write(a.Stdin)
	var wg sync.WaitGroup
	// The tails go in the result; the output from its start, up to the
	// client's cap, is kept with the attempt (hopper.Stdout, hopper.Stderr).
	wg.Go(func() { io.Copy(io.MultiWriter(&stdout, hopper.Stdout(ctx)), outR) })
	wg.Go(func() { io.Copy(io.MultiWriter(&stderr, hopper.Stderr(ctx)), errR) })
	// startErr is why the supervisor could not start the command, if it
	// could not.
	var startErr error
	if sv != nil {
		startErr = sv.handshake(a.Command)
	}
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
	if ps := cmd.ProcessState; ps != nil {
		res.ExitCode = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = unix.SignalName(ws.Signal())
		}
	}
	if startErr != nil && ctx.Err() == nil {
		if errors.Is(startErr, errNoHandshake) {
			return nil, supervisorEnded(a.Command, waitErr, res)
		}
		return nil, startErr
	}
	if err := runError(ctx, a, res, waitErr); err != nil {
		return res, err
	}
	return res, nil
}

// runError is the error of a command that ran, with result res and
// cmd.Wait's error waitErr; nil if it succeeded.
func runError(ctx context.Context, a ExecArgs, res *ExecResult, waitErr error) error {
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		if errors.Is(cause, errExecTimeout) {
			return fmt.Errorf("exec %s: timed out after %s: process group killed%s", a.Command, a.Timeout, errExcerpt(res.StderrTail))
		}
		return fmt.Errorf("exec %s: killed (%v)%s", a.Command, cause, errExcerpt(res.StderrTail))
	}
	var ee *exec.ExitError
	switch {
	case waitErr == nil:
		return nil
	case !errors.As(waitErr, &ee):
		return fmt.Errorf("exec %s: %w", a.Command, waitErr)
	case res.Signal != "":
		return fmt.Errorf("exec %s: killed by signal %s%s", a.Command, res.Signal, errExcerpt(res.StderrTail))
	}
	err := fmt.Errorf("exec %s: exit code %d%s", a.Command, res.ExitCode, errExcerpt(res.StderrTail))
	if slices.Contains(a.PermanentExitCodes, res.ExitCode) {
		return hopper.Permanent(err)
	}
	return err
}

// graceful reports whether ctx, done, was cancelled by Cancel (not by a
// timeout, Terminate or a shutdown): the command then gets SIGTERM first.
func graceful(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), hopper.ErrCancelled)
}

// killGroup sends SIGKILL to process group pgid; a group already gone is
// not an error.
func killGroup(pgid int) error { return signalGroup(pgid, syscall.SIGKILL) }

// signalGroup sends sig to process group pgid; a group already gone is not
// an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 0 {
		return os.ErrProcessDone
	}
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// startError classifies a failure to start the command: one that running
// again cannot fix (not found, not executable, bad directory, too long) is
// permanent.
func startError(command string, err error) error {
	err = fmt.Errorf("exec %s: cannot start: %w", command, err)
	if isPermanentStartError(err) {
		return hopper.Permanent(err)
	}
	return err
}

func isPermanentStartError(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) ||
		errors.Is(err, syscall.ENOEXEC) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, exec.ErrDot) ||
		errors.Is(err, syscall.E2BIG) || errors.Is(err, syscall.ENAMETOOLONG) || errors.Is(err, syscall.ELOOP)
}

// errExcerpt formats the end of the last line of stderr for an error
// message.
func errExcerpt(stderr string) string {
	if s := lastLine(stderr); s != "" {
		return ": " + s
	}
	return ""
}

// supervisorEnded is the error of a supervisor that ended (waitErr) without
// reporting whether it started the command. It may have died before the
// command started or after (killed between starting it and reporting), so
// the error claims neither, unless the command's output res shows it ran.
func supervisorEnded(command string, waitErr error, res *ExecResult) error {
	ran := ""
	if res.StdoutTail != "" || res.StderrTail != "" {
		ran = "; the command had started: it wrote output"
	}
	return fmt.Errorf("exec %s: the supervisor ended (%v) before reporting whether it started the command%s%s",
		command, waitErr, ran, errExcerpt(res.StderrTail))
}

// stdinPipe is the standard input of a command: the null device, or a pipe
// that a goroutine fills with ExecArgs.Stdin and then closes.
type stdinPipe struct {
	// r is the command's end: nil for the null device in a direct start
	// (exec opens it), else a file a supervisor passes on.
	r *os.File
	// w is this process's end of the pipe; nil without one.
	w *os.File
	// written is closed once the writer is done.
	written chan struct{}
}

// newStdinPipe returns the standard input of a command whose
// ExecArgs.Stdin is data.
func newStdinPipe(data string) (*stdinPipe, error) {
	if data == "" {
		return &stdinPipe{}, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &stdinPipe{r: r, w: w}, nil
}

// write closes the command's end, which the command (or its supervisor)
// now holds, and writes data into the pipe in a goroutine, closing it
// after: the command reads it at its own pace, or never (a write to a pipe
// nobody reads any longer fails, and close ends a write still waiting).
func (p *stdinPipe) write(data string) {
	if p.w == nil {
		return
	}
	p.r.Close()
	p.written = make(chan struct{})
	go func() {
		defer close(p.written)
		io.WriteString(p.w, data)
		p.w.Close()
	}()
}

// close closes both ends and waits for the writer, if one was started.
func (p *stdinPipe) close() {
	if p.w == nil {
		return
	}
	p.r.Close()
	p.w.Close()
	if p.written != nil {
		<-p.written
	}
}
