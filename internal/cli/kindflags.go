package cli

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/kinds"
	"github.com/spf13/pflag"
)

// ExecAllowEnv names the environment variable holding the exec allow-list
// (comma-separated absolute paths or patterns) of every command: enqueue,
// schedule add and the others check exec jobs against it, and serve reads
// it when --exec-allow is not given.
const ExecAllowEnv = "HOPPER_EXEC_ALLOW"

// HTTPAllowEnv names the environment variable that opens addresses and
// host names to http jobs (comma-separated CIDR prefixes, IP addresses and
// host names): enqueue, schedule add and the others check http jobs
// against it, and serve reads it when --http-allow is not given.
const HTTPAllowEnv = "HOPPER_HTTP_ALLOW"

// offerFlags are serve's flags for the kinds it offers and their policies.
type offerFlags struct {
	kinds     string
	execAllow []string
	execUser  string
	execEnv   []string
	httpAllow []string
	httpProxy bool
}

func (f *offerFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.kinds, "kinds", defaultKinds(kinds.ExecSupported), "the built-in kinds this server offers: the API and the workers refuse the others (comma-separated; exec only on Unix)")
	fs.StringArrayVar(&f.execAllow, "exec-allow", nil, "exec jobs may run only these programs: absolute paths or patterns, * not crossing / (repeatable or comma-separated; default $"+ExecAllowEnv+", else any program)")
	fs.StringVar(&f.execUser, "exec-user", "", "run exec jobs' commands as this user (needs root)")
	fs.StringArrayVar(&f.execEnv, "exec-env", nil, "pass this variable of the server's environment to exec jobs' commands (repeatable or comma-separated; never HOPPER_*)")
	fs.StringArrayVar(&f.httpAllow, "http-allow", nil, "let http jobs connect to a CIDR prefix, an IP address, or a host name (whatever it resolves to), beyond the default that refuses loopback, private, link-local... addresses (repeatable or comma-separated; default $"+HTTPAllowEnv+")")
	fs.BoolVar(&f.httpProxy, "http-proxy-from-env", false, "send http jobs through the proxy of HTTP_PROXY, HTTPS_PROXY and NO_PROXY (ignored by default); the proxy's address is checked as any other")
}

// options reads the flags, and $HOPPER_EXEC_ALLOW if --exec-allow is not
// given ($HOPPER_HTTP_ALLOW if --http-allow is not), into checked Options.
func (f *offerFlags) options(fs *pflag.FlagSet) (kinds.Options, error) {
	var o kinds.Options
	for _, k := range strings.Split(f.kinds, ",") {
		if k = strings.TrimSpace(k); k != "" {
			o.Kinds = append(o.Kinds, k)
		}
	}
	if len(o.Kinds) == 0 {
		return o, usagef("bad --kinds %q: list the kinds to offer, of %s and %s (to run no jobs, use --workers 0)", f.kinds, kinds.KindExec, kinds.KindHTTP)
	}
	if err := checkExecSupported(o, kinds.ExecSupported, runtime.GOOS); err != nil {
		return o, err
	}
	allowFrom := "--exec-allow"
	if fs.Changed("exec-allow") {
		if o.Exec.Allow = splitList(f.execAllow); len(o.Exec.Allow) == 0 {
			return o, usagef("bad --exec-allow: empty; list the programs exec jobs may run (to run none, leave exec out of --kinds)")
		}
	} else {
		o.Exec.Allow = splitList([]string{os.Getenv(ExecAllowEnv)})
		allowFrom = "$" + ExecAllowEnv
	}
	o.Exec.User = f.execUser
	if fs.Changed("exec-user") && strings.TrimSpace(f.execUser) == "" {
		return o, usagef("bad --exec-user: empty; name a user, or leave the flag out to run commands as the server's user")
	}
	o.Exec.PassEnv = splitList(f.execEnv)
	if !offers(o, kinds.KindExec) {
		for _, name := range []string{"exec-allow", "exec-user", "exec-env"} {
			if fs.Changed(name) {
				return o, usagef("--%s applies to exec jobs, and --kinds %s leaves exec out", name, f.kinds)
			}
		}
		o.Exec.Allow = nil // $HOPPER_EXEC_ALLOW, for another server
	}
	httpFrom := "--http-allow"
	if fs.Changed("http-allow") {
		o.HTTP.Allow = splitList(f.httpAllow)
	} else {
		o.HTTP.Allow = splitList([]string{os.Getenv(HTTPAllowEnv)})
		httpFrom = "$" + HTTPAllowEnv
	}
	o.HTTP.ProxyFromEnvironment = f.httpProxy
	if !offers(o, kinds.KindHTTP) {
		for _, name := range []string{"http-allow", "http-proxy-from-env"} {
			if fs.Changed(name) {
				return o, usagef("--%s applies to http jobs, and --kinds %s leaves http out", name, f.kinds)
			}
		}
		o.HTTP = kinds.HTTPPolicy{} // $HOPPER_HTTP_ALLOW, for another server
	}
	return o, optionsError(o, allowFrom, httpFrom)
}

// defaultKinds is the default of --kinds: both built-in kinds where this
// system runs exec jobs (execSupported, kinds.ExecSupported), else http.
func defaultKinds(execSupported bool) string {
	if execSupported {
		return kinds.KindExec + "," + kinds.KindHTTP
	}
	return kinds.KindHTTP
}

// checkExecSupported refuses Options o that offer exec on goos, a system
// where exec jobs cannot run (execSupported false): its workers would
// claim them only to fail them.
func checkExecSupported(o kinds.Options, execSupported bool, goos string) error {
	if execSupported || !offers(o, kinds.KindExec) {
		return nil
	}
	return usagef("bad --kinds %s: the exec kind is not supported on %s (commands run in Unix process groups); offer --kinds %s, and run exec jobs on a server on Linux or macOS", strings.Join(o.Kinds, ","), goos, kinds.KindHTTP)
}

// envOptions are the Options of the commands other than serve: both
// kinds, the allow-list of $HOPPER_EXEC_ALLOW and the addresses of
// $HOPPER_HTTP_ALLOW.
func envOptions() (kinds.Options, error) {
	o := kinds.Options{
		Exec: kinds.ExecPolicy{Allow: splitList([]string{os.Getenv(ExecAllowEnv)})},
		HTTP: kinds.HTTPPolicy{Allow: splitList([]string{os.Getenv(HTTPAllowEnv)})},
	}
	return o, optionsError(o, "$"+ExecAllowEnv, "$"+HTTPAllowEnv)
}

// optionsError is the usage error of invalid Options, naming the flag
// (or, for the allow-lists, execFrom and httpFrom: the flag or the
// variable) of the field at fault.
func optionsError(o kinds.Options, execFrom, httpFrom string) error {
	err := o.Validate()
	var fe *hopper.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	flag := map[string]string{
		"Options.Kinds":        "--kinds",
		"Options.Exec.Allow":   execFrom,
		"Options.HTTP.Allow":   httpFrom,
		"Options.Exec.User":    "--exec-user",
		"Options.Exec.PassEnv": "--exec-env",
	}[fe.Field]
	if flag == "" {
		return usageError{err}
	}
	return usagef("bad %s: %s", flag, fe.Reason)
}

// offers reports whether o offers kind.
func offers(o kinds.Options, kind string) bool {
	return o.Kinds == nil || slices.Contains(o.Kinds, kind)
}

// splitList splits comma-separated values, trimming spaces and dropping
// empty items.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

// offerAttrs are the log attributes of o for the line that says serve
// runs.
func offerAttrs(o kinds.Options) []any {
	ks := o.Kinds
	if ks == nil {
		ks = []string{kinds.KindExec, kinds.KindHTTP}
	}
	attrs := []any{"kinds", strings.Join(ks, ",")}
	if offers(o, kinds.KindHTTP) && o.HTTP.Allow != nil {
		attrs = append(attrs, "http_allow", strings.Join(o.HTTP.Allow, ","))
	}
	if offers(o, kinds.KindHTTP) && o.HTTP.ProxyFromEnvironment {
		attrs = append(attrs, "http_proxy", "from environment")
	}
	if !offers(o, kinds.KindExec) {
		return attrs
	}
	allow := "(any)"
	if o.Exec.Allow != nil {
		allow = strings.Join(o.Exec.Allow, ",")
	}
	attrs = append(attrs, "exec_allow", allow)
	if o.Exec.User != "" {
		attrs = append(attrs, "exec_user", o.Exec.User)
	}
	if o.Exec.PassEnv != nil {
		attrs = append(attrs, "exec_env", strings.Join(o.Exec.PassEnv, ","))
	}
	return attrs
}

// execRootWarning is the warning of a server with Options o that offers
// exec over HTTP and runs the commands as root.
func execRootWarning(o kinds.Options) string {
	what := "any command"
	if o.Exec.Allow != nil {
		what = "the programs of --exec-allow, with any arguments,"
	}
	return fmt.Sprintf("exec jobs run as root: any API client allowed to enqueue exec jobs can run %s as root on this machine; "+
		"pass --exec-user NAME to run them as an unprivileged user, --exec-allow to limit the programs, or --kinds %s to offer no exec", what, kinds.KindHTTP)
}
