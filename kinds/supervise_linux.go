package kinds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hopperq/hopper"
)

// How an exec job's command is kept from outliving the process running
// Exec (the server), even when the server dies by SIGKILL.
//
// Linux can signal a child when its parent dies (prctl PR_SET_PDEATHSIG),
// but only the direct child, and the command's own children are not
// covered. So Exec starts a supervisor: the server's own executable
// (/proc/self/exe), re-executed with argv [supervisorArg0, server pid], in a
// new process group and with SIGTERM as its parent-death signal. Supervise,
// called first in main, notices argv[0] and runs the supervisor. It reads
// the command (path, dir, user, argv, environment) from its stdin, starts it
// in its own process group, as that user if one is given, reports on file
// descriptor 3 whether it started, and waits for it, passing its stdout and
// stderr through (they are the server's pipes) and giving it file
// descriptor 4 as its stdin (ExecArgs.Stdin's pipe, or the null device). On SIGTERM from a dead server it kills its process group
// with SIGKILL, itself included; when the command ends it exits with the
// command's exit code, or dies of the command's signal. Before it starts
// the command it closes the descriptors it inherited beyond 0–4
// (closeInherited): the command gets its stdio and nothing else.
//
// The supervisor itself keeps the server's user (it must be able to kill
// the command's group and read the server's pipes) but gets only the base
// of a command's environment (ExecPolicy), never the server's: its own
// environment would otherwise be readable, in /proc, by the command it
// starts when both run as the same user.
//
// The parent-death signal is sent when the thread that started the child
// exits, not only the process; Go threads exit when a goroutine locked to
// one ends. The supervisor therefore acts on SIGTERM only if its parent
// process changed (it was re-parented, so the server is gone), and ignores
// it otherwise.

// supervisorArg0 is argv[0] of a supervisor process.
const supervisorArg0 = "hopper-exec-supervisor"

// selfExe is this process's executable, also after it was replaced or
// deleted on disk.
const selfExe = "/proc/self/exe"

// supervisorAvailable records that Supervise was called: this program can
// run supervisors.
var supervisorAvailable atomic.Bool

// Supervise must be called first in main by a program that runs exec jobs
// (one that calls Register, or Exec), before anything else the program
// does; package init functions run before it, in supervisors too, so keep
// side effects out of them.
//
// Exec then runs each command under a supervisor, a copy of this program
// started from /proc/self/exe, so that if this process dies, even by
// SIGKILL, the command's whole process group is killed (grandchildren
// included; a process that left the group with setsid or setpgid
// escapes). When this process was started as such a supervisor, Supervise
// supervises the command and exits the process with the command's exit
// status (or dies of its signal): it never returns. Otherwise it records
// that supervisors are available and returns at once.
//
// Without a call to Supervise, Exec starts commands directly with SIGKILL
// as their parent-death signal: a command dies with this process, but the
// processes it started may survive a SIGKILL of this process. Supervise is
// safe to call more than once; on systems other than Linux it does nothing.
func Supervise() {
	if len(os.Args) == 2 && os.Args[0] == supervisorArg0 {
		if ppid, err := strconv.Atoi(os.Args[1]); err == nil && ppid > 1 {
			supervise(ppid)
		}
	}
	if _, err := os.Stat(selfExe); err == nil {
		supervisorAvailable.Store(true)
	}
}

// supervisorLink is the server's end of a supervisor's two pipes: the
// command goes to its stdin, and it says on fd 3 whether it started it;
// fd 4 is the command's stdin.
type supervisorLink struct {
	spec             []byte
	specR, specW     *os.File
	statusR, statusW *os.File
	// null is the null device opened as the command's standard input,
	// if it has no other.
	null *os.File
}

// errNoHandshake means the supervisor exited without saying whether it
// started the command.
var errNoHandshake = errors.New("no word from the supervisor")

// supervisorCommand returns a supervisor command for target (not started)
// and its link.
//
// stdin is the command's standard input, passed to the supervisor as its
// file descriptor 4; nil is the null device.
func supervisorCommand(ctx context.Context, target *exec.Cmd, stdin *os.File) (*exec.Cmd, *supervisorLink, error) {
	l := &supervisorLink{spec: encodeSpec(target)}
	var err error
	if l.specR, l.specW, err = os.Pipe(); err != nil {
		return nil, nil, err
	}
	if l.statusR, l.statusW, err = os.Pipe(); err != nil {
		l.close()
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, selfExe)
	cmd.Args = []string{supervisorArg0, strconv.Itoa(os.Getpid())}
	cmd.Env = (*execRunner)(nil).env(nil)
	cmd.Stdin = l.specR
	if stdin == nil {
		if l.null, err = os.Open(os.DevNull); err != nil {
			l.close()
			return nil, nil, err
		}
		stdin = l.null
	}
	cmd.ExtraFiles = []*os.File{l.statusW, stdin}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	return cmd, l, nil
}

// started closes the supervisor's ends of the pipes once it started (or
// failed to).
func (l *supervisorLink) started() {
	if l != nil {
		l.specR.Close()
		l.statusW.Close()
		if l.null != nil {
			l.null.Close()
		}
	}
}

// close closes every pipe.
func (l *supervisorLink) close() {
	if l != nil {
		for _, f := range []*os.File{l.specR, l.specW, l.statusR, l.statusW, l.null} {
			if f != nil {
				f.Close()
			}
		}
	}
}

// handshake sends the command to the supervisor and returns once it
// started it (nil), could not (the start error, classified as startError
// does), or exited without a word (errNoHandshake). It closes the pipes.
func (l *supervisorLink) handshake(command string) error {
	defer l.close()
	l.specW.Write(l.spec) // a supervisor that died reports nothing below
	l.specW.Close()
	b, _ := io.ReadAll(l.statusR)
	msg := string(b)
	switch {
	case msg == "ok":
		return nil
	case strings.HasPrefix(msg, "err "):
		permanent, text, _ := strings.Cut(msg[len("err "):], " ")
		err := fmt.Errorf("exec %s: cannot start: %s", command, text)
		if permanent == "permanent" {
			return hopper.Permanent(err)
		}
		return err
	}
	return errNoHandshake
}

// encodeSpec encodes target for a supervisor as NUL-terminated strings:
// path, dir, the user (see encodeCred), the number of arguments, argv, then
// the environment. No string can hold a NUL (ExecArgs.Validate), so every
// byte is kept.
func encodeSpec(target *exec.Cmd) []byte {
	var b bytes.Buffer
	var cred *syscall.Credential
	if target.SysProcAttr != nil {
		cred = target.SysProcAttr.Credential
	}
	for _, s := range append([]string{target.Path, target.Dir, encodeCred(cred), strconv.Itoa(len(target.Args))}, append(target.Args, target.Env...)...) {
		b.WriteString(s)
		b.WriteByte(0)
	}
	return b.Bytes()
}

// decodeSpec decodes what encodeSpec encoded.
func decodeSpec(b []byte) (*exec.Cmd, error) {
	if len(b) == 0 || b[len(b)-1] != 0 {
		return nil, errors.New("truncated command")
	}
	f := strings.Split(string(b[:len(b)-1]), "\x00")
	if len(f) < 4 {
		return nil, errors.New("truncated command")
	}
	cred, err := decodeCred(f[2])
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(f[3])
	if err != nil || n < 1 || n > len(f)-4 {
		return nil, errors.New("bad argument count")
	}
	return &exec.Cmd{Path: f[0], Dir: f[1], Args: f[4 : 4+n], Env: f[4+n:], SysProcAttr: &syscall.SysProcAttr{Credential: cred}}, nil
}

// encodeCred encodes the user a command runs as: "" for the supervisor's
// own, else "UID GID G1,G2,...".
func encodeCred(c *syscall.Credential) string {
	if c == nil {
		return ""
	}
	groups := make([]string, len(c.Groups))
	for i, g := range c.Groups {
		groups[i] = strconv.FormatUint(uint64(g), 10)
	}
	return fmt.Sprintf("%d %d %s", c.Uid, c.Gid, strings.Join(groups, ","))
}

// decodeCred decodes what encodeCred encoded.
func decodeCred(s string) (*syscall.Credential, error) {
	if s == "" {
		return nil, nil
	}
	f := strings.Split(s, " ")
	if len(f) != 3 {
		return nil, errors.New("bad user")
	}
	ids := []string{f[0], f[1]}
	if f[2] != "" {
		ids = append(ids, strings.Split(f[2], ",")...)
	}
	n := make([]uint32, len(ids))
	for i, id := range ids {
		v, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			return nil, errors.New("bad user")
		}
		n[i] = uint32(v)
	}
	return &syscall.Credential{Uid: n[0], Gid: n[1], Groups: n[2:]}, nil
}

// directProcAttr is the process attributes of a command started without
// a supervisor: its own process group, and SIGKILL if this process (the
// thread that started it) dies.
func directProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// supervise is a supervisor's main: see the comment at the top of this
// file. It never returns.
func supervise(ppid int) {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	// Installed before this check, the handler sees any later death of
	// the server; an earlier one shows as a new parent.
	if os.Getppid() != ppid {
		os.Exit(1)
	}
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	closeInherited()
	status := os.NewFile(3, "status")
	fail := func(permanent bool, err error) {
		class := "retry"
		if permanent {
			class = "permanent"
		}
		fmt.Fprintf(status, "err %s %v", class, err)
		os.Exit(1)
	}
	spec, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(false, fmt.Errorf("supervisor: reading the command: %w", err))
	}
	os.Stdin.Close()
	cmd, err := decodeSpec(spec)
	if err != nil {
		fail(false, fmt.Errorf("supervisor: %w", err))
	}
	// The command inherits this process group; the parent-death signal
	// covers a supervisor that dies alone (the server kills the whole
	// group itself). The child changes user (the spec's) before it sets
	// the parent-death signal, which a change of user would clear.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.NewFile(4, "stdin"), os.Stdout, os.Stderr
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		fail(isPermanentStartError(err), err)
	}
	io.WriteString(status, "ok")
	status.Close()
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	for {
		select {
		case <-done:
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				dieOfSignal(ws.Signal())
			}
			os.Exit(ws.ExitStatus())
		case <-term:
			if os.Getppid() != ppid { // the server died
				syscall.Kill(0, syscall.SIGKILL) // this process group, this process included
			}
		}
	}
}

// closeInherited closes the descriptors this supervisor inherited beyond
// stdin, stdout, stderr, the status pipe (fd 3) and the command's stdin
// (fd 4): those the server
// itself inherited without close-on-exec from whoever started it (a shell,
// a service manager, a test harness) and passed on. A command would get
// them otherwise, and with them whatever they open — a file or a socket
// its user (--exec-user) could not open itself. Go opens every descriptor
// of its own with close-on-exec, the runtime's included, so a descriptor
// without it can only have been inherited.
func closeInherited() {
	entries, err := os.ReadDir("/proc/self/fd") // its own descriptor has close-on-exec
	if err != nil {
		return
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 4 {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			unix.Close(fd)
		}
	}
}

// dieOfSignal ends this process by signal sig, as the command it
// supervised ended, so that Exec sees the same wait status. It never
// returns.
func dieOfSignal(sig syscall.Signal) {
	// No core dump: the command may have dumped one; this process's
	// would only be noise.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if sig != syscall.SIGKILL && sig != syscall.SIGSTOP {
		// The kernel's struct sigaction, all zero: SIG_DFL, no flags,
		// empty mask. The Go runtime's handler would ignore or
		// translate signals such as SIGSEGV sent by kill.
		var act [4]uint64
		syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	}
	runtime.LockOSThread()
	var set unix.Sigset_t
	set.Val[(sig-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
	unix.Tgkill(unix.Getpid(), unix.Gettid(), sig)
	os.Exit(128 + int(sig)) // a signal whose default is not to terminate
}
