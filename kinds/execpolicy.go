package kinds

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// ErrExecNotAllowed is the error of a command outside ExecPolicy.Allow
// (matched with errors.Is, also through the *hopper.FieldError of
// Enqueue).
var ErrExecNotAllowed = errors.New("not in the exec allow-list")

// execRunner is an ExecPolicy ready to run commands: its patterns checked
// and cleaned, its user looked up.
type execRunner struct {
	// allow is ExecPolicy.Allow, cleaned; nil: any command.
	allow []string
	// cred is the user and groups commands run as; nil: this process's.
	cred *execCred
	// userEnv is HOME, USER and LOGNAME of ExecPolicy.User (nil: none).
	userEnv []string
	// pass is ExecPolicy.PassEnv.
	pass []string
}

// defaultExec runs commands with the default policy (Exec's).
var defaultExec = &execRunner{}

// runner checks p and makes its runner.
func (p *ExecPolicy) runner() (*execRunner, error) {
	r := &execRunner{pass: slices.Clone(p.PassEnv)}
	var err error
	if r.allow, err = p.allowList(); err != nil {
		return nil, err
	}
	if err := p.checkPassEnv(); err != nil {
		return nil, err
	}
	if p.User != "" {
		if r.cred, r.userEnv, err = lookupExecUser(p.User, os.Geteuid()); err != nil {
			return nil, optionError("Options.Exec.User", err.Error())
		}
	}
	return r, nil
}

// execPATH is the PATH of commands: this process's, or DefaultExecPath.
func execPATH() string {
	return cmp.Or(os.Getenv("PATH"), DefaultExecPath)
}

// isBaseEnv reports whether the variable name is one that commands get
// from this process (see ExecPolicy); PATH is set apart.
func isBaseEnv(name string) bool {
	switch name {
	case "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// env returns the environment of a command with the job's variables extra,
// made from this process's: see ExecPolicy. With r nil it is only the
// base variables (a supervisor's environment).
func (r *execRunner) env(extra []string) []string {
	return r.envFrom(os.Environ(), extra)
}

// envFrom is env from the process environment environ.
func (r *execRunner) envFrom(environ, extra []string) []string {
	var pass, userEnv []string
	if r != nil {
		pass, userEnv = r.pass, r.userEnv
	}
	env := make([]string, 1, 12+len(pass)+len(extra))
	path := ""
	for _, kv := range environ {
		name, v, _ := strings.Cut(kv, "=")
		switch {
		case name == "PATH":
			path = v
		case userEnv != nil && (name == "HOME" || name == "USER" || name == "LOGNAME"):
		case isBaseEnv(name):
			env = append(env, kv)
		}
	}
	env[0] = "PATH=" + cmp.Or(path, DefaultExecPath)
	env = append(env, userEnv...)
	for _, name := range pass {
		for _, kv := range environ {
			if strings.HasPrefix(kv, name) && len(kv) > len(name) && kv[len(name)] == '=' {
				env = append(env, kv)
				break
			}
		}
	}
	return append(env, extra...)
}

// commandPath returns the absolute, clean path of the program command, as
// a command runs it: a name without "/" is looked up in pathList (only its
// absolute entries: an empty or relative one would be relative to a
// directory the job chooses), a relative path is taken from dir (itself
// taken from this process's working directory if relative).
func commandPath(command, dir, pathList string) (string, error) {
	if !strings.Contains(command, "/") {
		for _, d := range filepath.SplitList(pathList) {
			if !filepath.IsAbs(d) {
				continue
			}
			p := filepath.Join(d, command)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return "", &exec.Error{Name: command, Err: exec.ErrNotFound}
	}
	p := command
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Abs(p) // cleaned
}

// resolve returns the path a's command runs from, as commandPath finds it,
// if the allow-list lets it run; otherwise an error matching
// ErrExecNotAllowed. A command not found is an error of commandPath.
func (r *execRunner) resolve(a *ExecArgs) (string, error) {
	p, err := commandPath(a.Command, a.Dir, execPATH())
	if err != nil {
		return "", err
	}
	if r.allow != nil && !r.allowed(p) {
		if p == a.Command {
			return "", fmt.Errorf("exec: %s is %w (hopper serve --exec-allow, kinds.ExecPolicy.Allow)", p, ErrExecNotAllowed)
		}
		return "", fmt.Errorf("exec: command %q is %s, which is %w (hopper serve --exec-allow, kinds.ExecPolicy.Allow)", a.Command, p, ErrExecNotAllowed)
	}
	return p, nil
}

// allowed reports whether the clean absolute path p matches an entry of
// the allow-list.
func (r *execRunner) allowed(p string) bool {
	for _, pat := range r.allow {
		if ok, _ := path.Match(pat, p); ok {
			return true
		}
	}
	return false
}

// check is the check of exec args at enqueue (hopper.RegisterChecked):
// the command must resolve to a path in the allow-list.
func (r *execRunner) check(a ExecArgs) error {
	if _, err := r.resolve(&a); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("exec: command %q is not in PATH (%s), so it is %w (hopper serve --exec-allow, kinds.ExecPolicy.Allow)", a.Command, execPATH(), ErrExecNotAllowed)
		}
		return err
	}
	return nil
}
