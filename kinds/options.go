package kinds

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/hopperq/hopper"
)

// Options say which built-in kinds a program offers and what their jobs may
// reach: the operator's policy, applied at enqueue (so a mistake or an
// attempt outside the policy is refused at once) and again when a job runs
// (a job stored before the policy changed fails permanently, saying why).
// The zero value offers both kinds with the default policies, which are
// the safe ones: see ExecPolicy and HTTPPolicy.
type Options struct {
	// Kinds lists the kinds to register, of KindExec and KindHTTP (nil:
	// both). A kind left out is not registered: a client refuses to
	// enqueue it as it refuses any kind it has no handler for (unless it
	// is in hopper.Config.ExternalKinds). An empty, non-nil list is an
	// error: a program that offers neither kind does not register them.
	Kinds []string
	// Exec is the policy of exec jobs; it applies only if KindExec is
	// offered.
	Exec ExecPolicy
	// HTTP is the policy of http jobs.
	HTTP HTTPPolicy
}

// ExecPolicy is what exec jobs may run, as whom, and with which
// environment. The zero value allows any command, runs it as the user of
// the process running the job, and gives it the clean environment below.
//
// The environment of a command is never the environment of the process
// running it, which may hold secrets (hopper serve's $HOPPER_TOKENS, a
// database password in $HOPPER_DB). It is, in this order (a later
// variable of the same name wins):
//
//   - PATH, HOME, USER, LOGNAME, LANG, LANGUAGE, every LC_* variable, TZ
//     and TMPDIR of this process, those it has (PATH is DefaultExecPath
//     if it has none; with User set, HOME, USER and LOGNAME are that
//     user's instead);
//   - the variables named in PassEnv, those this process has;
//   - the job's own ExecArgs.Env.
type ExecPolicy struct {
	// Allow, if not empty, lists the only commands exec jobs may run:
	// absolute paths, or patterns of them in the syntax of path.Match,
	// where * and ? do not match "/" ("/opt/jobs/*" allows
	// /opt/jobs/backup but not /opt/jobs/old/backup). A command is matched
	// by the absolute path it runs from, cleaned: a name looked up in PATH
	// (the command's PATH above, not one the job sets), a relative path
	// taken from ExecArgs.Dir. Symbolic links are not followed: "/bin/*"
	// does not allow /usr/bin/sh even where /bin links to /usr/bin. Jobs
	// are checked at Enqueue and AddSchedule (a *hopper.FieldError on
	// "args", matching ErrExecNotAllowed) and again when they run (a job
	// outside the list fails permanently, saying why).
	//
	// Only the program is checked, not its arguments nor its
	// environment: allowing a shell, env, an interpreter (python, perl,
	// node…), find, xargs or any program that runs others allows every
	// command.
	Allow []string
	// User, if set, is the user commands run as: a user name, or a
	// numeric user ID. Commands get that user's ID, primary group and
	// supplementary groups, and its HOME, USER and LOGNAME. Changing user
	// needs root: when this process is not root, User must be its own
	// user.
	User string
	// PassEnv names variables of this process that commands get too (a
	// variable this process does not have is left out). Names starting
	// with HOPPER_ are refused: they hold Hopper's own settings and
	// secrets.
	PassEnv []string
}

// DefaultExecPath is the PATH of exec jobs' commands when the process
// running them has none.
const DefaultExecPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Validate reports what is wrong with o, if anything, as a
// *hopper.FieldError naming the field ("Options.Exec.Allow"): a kind that
// is not built in, an entry of Exec.Allow that is not an absolute path or
// pattern, an Exec.User that does not exist or that this process cannot
// become, an Exec.PassEnv name that is not a variable name or starts with
// HOPPER_, an entry of HTTP.Allow that is neither a CIDR prefix, an IP
// address nor a host name. RegisterWith makes the same checks.
func (o Options) Validate() error {
	_, err := o.compile()
	return err
}

// ExecAsRoot reports whether o offers KindExec and its commands would run
// as root in this process: this process is root, and Exec.User is empty
// or names a user whose ID is 0. It is false if o is not valid. hopper
// serve warns then, when it serves exec over HTTP.
func (o Options) ExecAsRoot() bool {
	ks, err := o.offered()
	if err != nil || !slices.Contains(ks, KindExec) || os.Geteuid() != 0 {
		return false
	}
	if o.Exec.User == "" {
		return true
	}
	return execUserIsRoot(o.Exec.User)
}

// compiled is Options checked and ready to register.
type compiled struct {
	kinds []string
	// exec runs exec jobs; nil if the kind is not offered.
	exec *execRunner
	// http runs http jobs; nil if the kind is not offered.
	http *HTTPRunner
}

// compile checks o and prepares what it registers.
func (o *Options) compile() (*compiled, error) {
	ks, err := o.offered()
	if err != nil {
		return nil, err
	}
	c := &compiled{kinds: ks}
	if slices.Contains(ks, KindExec) {
		if c.exec, err = o.Exec.runner(); err != nil {
			return nil, err
		}
	}
	if slices.Contains(ks, KindHTTP) {
		if c.http, err = NewHTTPRunner(o.HTTP); err != nil {
			return nil, optionError("Options.HTTP.Allow", err.Error())
		}
	}
	return c, nil
}

// offered returns the kinds o offers, checked.
func (o *Options) offered() ([]string, error) {
	if o.Kinds == nil {
		return []string{KindExec, KindHTTP}, nil
	}
	if len(o.Kinds) == 0 {
		return nil, optionError("Options.Kinds", "empty: list the kinds to offer (nil: both); a program offering neither does not register them")
	}
	var out []string
	for _, k := range o.Kinds {
		if k != KindExec && k != KindHTTP {
			return nil, optionError("Options.Kinds", fmt.Sprintf("unknown kind %q (want %s or %s)", k, KindExec, KindHTTP))
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// optionError is the error of a bad field of Options.
func optionError(field, reason string) error {
	return &hopper.FieldError{Field: field, Reason: reason}
}

// allowList returns p.Allow checked and cleaned; nil if p allows any
// command.
func (p *ExecPolicy) allowList() ([]string, error) {
	if len(p.Allow) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(p.Allow))
	for _, pat := range p.Allow {
		clean, err := checkPattern(pat)
		if err != nil {
			return nil, optionError("Options.Exec.Allow", err.Error())
		}
		out = append(out, clean)
	}
	return out, nil
}

// checkPattern checks an entry of ExecPolicy.Allow and returns it cleaned
// (path.Clean): an absolute path, or a pattern of one that path.Match
// accepts.
func checkPattern(pattern string) (string, error) {
	switch {
	case strings.TrimSpace(pattern) == "":
		return "", errors.New("an empty entry (want an absolute path, or a pattern such as /opt/jobs/*)")
	case !strings.HasPrefix(pattern, "/"):
		return "", fmt.Errorf("%q is not an absolute path (want one such as /usr/local/bin/backup.sh, or a pattern such as /opt/jobs/*)", pattern)
	case strings.IndexByte(pattern, 0) >= 0:
		return "", fmt.Errorf("%q holds a NUL byte", pattern)
	}
	clean := path.Clean(pattern)
	if _, err := path.Match(clean, ""); err != nil {
		return "", fmt.Errorf("%q is not a valid pattern (path.Match): %v", pattern, err)
	}
	return clean, nil
}

// checkPassEnv checks the names of ExecPolicy.PassEnv.
func (p *ExecPolicy) checkPassEnv() error {
	for _, name := range p.PassEnv {
		var reason string
		switch {
		case name == "":
			reason = "an empty variable name"
		case strings.ContainsAny(name, "=\x00"):
			reason = fmt.Sprintf("%q is not a variable name", name)
		case strings.HasPrefix(strings.ToUpper(name), "HOPPER_"):
			reason = fmt.Sprintf("%s: variables named HOPPER_* hold Hopper's own settings and secrets, and are never passed to commands", name)
		default:
			continue
		}
		return optionError("Options.Exec.PassEnv", reason)
	}
	return nil
}
