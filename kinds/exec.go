package kinds

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hopperq/hopper"
)

// KindExec is the kind of jobs that run a command.
const KindExec = "exec"

// TailSize is how many bytes of a command's output (the last ones) and of an
// HTTP response body (the first ones) a result keeps.
const TailSize = 4 << 10

// Limits on an exec job's args, checked by ExecArgs.Validate. Linux refuses
// an argument or environment variable longer than 128 KiB (MAX_ARG_STRLEN,
// counting its final NUL) and a path longer than 4 KiB (PATH_MAX); the core
// refuses args whose JSON is over 1 MiB (hopper's job.MaxArgsSize), which
// bounds their total size.
const (
	MaxExecArgs     = 4096        // entries in ExecArgs.Args
	MaxExecEnv      = 1024        // entries in ExecArgs.Env
	MaxExecArgSize  = 128<<10 - 1 // bytes of each entry of ExecArgs.Args and ExecArgs.Env
	MaxExecPathSize = 4<<10 - 1   // bytes of ExecArgs.Command and ExecArgs.Dir
	MaxExecStdin    = 64 << 10    // bytes of ExecArgs.Stdin
)

// ExecArgs are the args of an exec job: a command run directly (no shell).
//
// The command runs in a process group of its own. When the job's context is
// done (its timeout, ExecArgs.Timeout, a terminate or a forced shutdown)
// the whole group is killed with SIGKILL, so children the command started
// die with it; a cancel (the cause hopper.ErrCancelled) sends the group
// SIGTERM first, and SIGKILL 2s later if the command has not exited; processes the command left behind in its group when it exits
// are killed too. On Linux, if the process running Exec dies, even by
// SIGKILL, the group is killed as well, provided the program called
// Supervise (see there); on other Unix systems it outlives that process.
//
// Exec jobs run on Unix only (Linux, macOS, the BSDs: see ExecSupported).
// Elsewhere (Windows) their args are still checked, so a program there can
// enqueue them for workers on Unix, but running one fails permanently with
// "exec kind: not supported on windows".
//
// Every string must be valid UTF-8 without NUL bytes: args are JSON text,
// which cannot carry other bytes exactly, and a command line cannot hold a
// NUL (Stdin, which is no part of a command line, may hold NUL bytes). See also the Max* limits.
type ExecArgs struct {
	// Command is the program: a path, or a name looked up in the PATH of
	// the command's environment (see ExecPolicy; not a PATH set in Env).
	// A relative path is taken from Dir.
	Command string `json:"command"`
	// Args are the program's arguments (without the program name).
	Args []string `json:"args,omitempty"`
	// Env adds "KEY=VALUE" variables to the command's environment, which
	// otherwise holds only the few variables ExecPolicy lists, never all
	// of the worker's; a variable set here wins.
	Env []string `json:"env,omitempty"`
	// Dir is the working directory (default: the worker's).
	Dir string `json:"dir,omitempty"`
	// Stdin is written to the command's standard input, which is then
	// closed; the command may read it or not. Empty (the default): the
	// standard input is the null device, at end-of-file at once. It is
	// text like every other string here (NUL bytes are allowed), of at most
	// MaxExecStdin bytes.
	Stdin string `json:"stdin,omitempty"`
	// Timeout kills the command after this long (0: only the job's own
	// timeout applies). A timeout fails the attempt; it is retried.
	Timeout Duration `json:"timeout,omitempty"`
	// PermanentExitCodes are exit codes, from 1 to 255, that fail the job
	// permanently: it goes to the dead-letter queue without further
	// attempts. Any other non-zero exit code fails the attempt and is
	// retried.
	PermanentExitCodes []int `json:"permanent_exit_codes,omitempty"`
}

// ExecResult is what an exec job's attempt produced once its command ran:
// the job's result when the attempt completed it, and the result kept with
// a failed attempt (hopper's Attempt.Result) when the command exited with
// another code than 0, was killed by a signal, or was killed on timeout or
// cancellation.
//
// The tails are text: each run of bytes that are not UTF-8 in the output is
// replaced by one U+FFFD, and a character cut by the start of the tail is
// dropped.
type ExecResult struct {
	// ExitCode is the command's exit code, or -1 if a signal ended it.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended the command, such as "SIGKILL"
	// (the signal of timeouts and terminates) or "SIGTERM" (a cancel's
	// first), if one did.
	Signal string `json:"signal,omitempty"`
	// Duration is how long the command ran.
	Duration Duration `json:"duration"`
	// StdoutTail and StderrTail are the last TailSize bytes of the
	// command's standard output and standard error.
	StdoutTail string `json:"stdout_tail"`
	StderrTail string `json:"stderr_tail"`
}

// Validate reports what is wrong with a, if anything, naming the field.
func (a *ExecArgs) Validate() error {
	if strings.TrimSpace(a.Command) == "" {
		return errors.New("exec: command must not be empty")
	}
	if err := checkExecString("command", a.Command, MaxExecPathSize); err != nil {
		return err
	}
	if len(a.Args) > MaxExecArgs {
		return fmt.Errorf("exec: %d args, more than the limit of %d", len(a.Args), MaxExecArgs)
	}
	for i, s := range a.Args {
		if err := checkExecString(fmt.Sprintf("args[%d]", i), s, MaxExecArgSize); err != nil {
			return err
		}
	}
	if len(a.Env) > MaxExecEnv {
		return fmt.Errorf("exec: %d env variables, more than the limit of %d", len(a.Env), MaxExecEnv)
	}
	for i, e := range a.Env {
		if err := checkExecString(fmt.Sprintf("env[%d]", i), e, MaxExecArgSize); err != nil {
			return err
		}
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("exec: env[%d] %q: want KEY=VALUE", i, e)
		}
	}
	if err := checkExecString("dir", a.Dir, MaxExecPathSize); err != nil {
		return err
	}
	if err := checkText(KindExec, "stdin", a.Stdin); err != nil {
		return err
	}
	if len(a.Stdin) > MaxExecStdin {
		return fmt.Errorf("exec: stdin is %d bytes, more than the limit of %d", len(a.Stdin), MaxExecStdin)
	}
	if a.Timeout < 0 {
		return fmt.Errorf("exec: timeout must not be negative, got %s", a.Timeout)
	}
	for _, c := range a.PermanentExitCodes {
		if c < 1 || c > 255 {
			return fmt.Errorf("exec: permanent_exit_codes: %d is not the exit code of a failure (want 1 to 255)", c)
		}
	}
	return nil
}

// checkExecString refuses a string that cannot be passed to a command
// exactly: one that is not UTF-8, holds a NUL or is longer than max bytes.
func checkExecString(field, s string, max int) error {
	if err := checkText(KindExec, field, s); err != nil {
		return err
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Errorf("exec: %s holds a NUL byte (at byte %d), which a command line cannot carry", field, i)
	}
	if len(s) > max {
		return fmt.Errorf("exec: %s is %d bytes, more than the limit of %d", field, len(s), max)
	}
	return nil
}

// Exec runs a command as described by a, with the default ExecPolicy: any
// command, as this process's user, in the clean environment ExecPolicy
// describes. It is the handler of KindExec registered by Register;
// RegisterWith runs commands with the policy it is given.
//
// Exit code 0 returns the result and a nil error. Once the command ran, a
// failure returns the result too, with an error that fails the attempt:
// another exit code (permanent if listed in a.PermanentExitCodes), a
// signal, or a kill on timeout or cancellation. The error message is short
// (the exit code or signal, and the end of the last line of stderr); the
// output is in the result. Invalid args, and a command that cannot be
// started because it is missing, not executable or too big, or because
// Dir is not a directory, fail permanently with no result; so does, with a
// policy, a command outside its allow-list (an error matching
// ErrExecNotAllowed).
//
// If the program called Supervise, the command runs under a supervisor
// process that kills its process group when this process dies; otherwise
// it is started directly and only it gets SIGKILL if this process dies.
func Exec(ctx context.Context, a ExecArgs) (*ExecResult, error) {
	return defaultExec.run(ctx, a, supervisorAvailable.Load())
}

// execUnsupported is the error of an exec job run on goos, a system
// without Unix processes (ExecSupported is false): a permanent failure.
func execUnsupported(goos string) error {
	return hopper.Permanent(fmt.Errorf("exec kind: not supported on %s (commands run in Unix process groups; run exec jobs on Linux or macOS)", goos))
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

// String returns the tail as text (see outputText).
func (t *tailBuffer) String() string {
	return outputText(t.buf, t.total > int64(len(t.buf)), false)
}
