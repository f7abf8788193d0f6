package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/wire"
	"github.com/hopperq/hopper/kinds"
	"github.com/spf13/pflag"
)

// jobFlags are the per-job options shared by enqueue and schedule add.
type jobFlags struct {
	queue       string
	priority    int
	delay       time.Duration
	at          string
	maxAttempts int
	timeout     time.Duration
	unique      string
	key         string
	debounce    time.Duration
	debounceMax time.Duration
	backoff     string
	meta        []string
	tags        []string
}

// register adds the flags to fs; a schedule's jobs take no delay, run time
// or unique key.
func (f *jobFlags) register(fs *pflag.FlagSet, forSchedule bool) {
	fs.StringVar(&f.queue, "queue", "", `queue of the job (default "default")`)
	fs.IntVar(&f.priority, "priority", 0, fmt.Sprintf("priority: lower runs first, from %d to %d", hopper.MinPriority, hopper.MaxPriority))
	fs.IntVar(&f.maxAttempts, "max-attempts", 0, fmt.Sprintf("attempts before the job goes to the dead-letter queue, 1 to %d (default %d)", hopper.MaxAttemptsLimit, hopper.DefaultMaxAttempts))
	if forSchedule {
		fs.DurationVar(&f.timeout, "timeout", 0, fmt.Sprintf("timeout of each attempt, e.g. 30s; 0: none (default: the schedule's period, the time to the next tick, at least %s)", roughDuration(hopper.MinScheduledTimeout)))
	} else {
		fs.DurationVar(&f.timeout, "timeout", 0, "timeout of each attempt, e.g. 30s (default none)")
	}
	fs.StringVar(&f.backoff, "retry-backoff", "", "delay between attempts: "+wire.RetryForms)
	fs.StringArrayVar(&f.meta, "meta", nil, fmt.Sprintf("metadata key=value kept with the job (repeatable; at most %d bytes in all)", hopper.MaxMetaSize))
	fs.StringSliceVar(&f.tags, "tag", nil, fmt.Sprintf("tag of the job, to list and count by (repeatable or comma-separated; at most %d, of letters, digits and _ - . : /)", hopper.MaxTags))
	if !forSchedule {
		fs.DurationVar(&f.delay, "delay", 0, "run no earlier than this long from now, e.g. 10m")
		fs.StringVar(&f.at, "at", "", "run no earlier than this RFC 3339 time, e.g. 2030-01-02T15:04:05Z")
		fs.StringVar(&f.unique, "unique", "", "unique key: while a job with this key waits or runs, enqueue returns that job instead")
		fs.DurationVar(&f.debounce, "debounce", 0, "with --unique: merge into the job waiting with the key (its args replaced) and run it this long after the latest enqueue, e.g. 5s")
		fs.StringVar(&f.key, "key", "", "flow-control key of the job (a tenant, a customer): its queue's --key-concurrency limits the jobs of one key running at once, and the queue serves its keys in turn")
		fs.DurationVar(&f.debounceMax, "debounce-max", 0, "with --debounce: run no later than this long after the first enqueue of the key, e.g. 1m (default no bound)")
	}
}

// document returns the job request the flags in fs describe: a flag
// given is a field given, so wire's explicit-zero rule refuses a value the
// library would read as "unset" (0, "") rather than silently replace it
// by a default, --priority 0 is the priority 0 and --timeout 0 no timeout.
func (f *jobFlags) document(fs *pflag.FlagSet) wire.Job {
	var j wire.Job
	set := fs.Changed
	if set("queue") {
		j.Queue = &f.queue
	}
	if set("priority") {
		j.Priority = &f.priority
	}
	if set("max-attempts") {
		j.MaxAttempts = &f.maxAttempts
	}
	if set("timeout") {
		j.Timeout = (*wire.Duration)(&f.timeout)
	}
	if set("retry-backoff") {
		j.Retry, _ = json.Marshal(f.backoff) // the compact form
	}
	if set("delay") {
		j.Delay = (*wire.Duration)(&f.delay)
	}
	if set("at") {
		j.RunAt = &f.at
	}
	if set("unique") {
		j.UniqueKey = &f.unique
	}
	if set("key") {
		j.Key = &f.key
	}
	if set("debounce") || set("debounce-max") {
		j.Debounce = &wire.Debounce{}
		if set("debounce") {
			j.Debounce.Period = (*wire.Duration)(&f.debounce)
		}
		if set("debounce-max") {
			j.Debounce.MaxWait = (*wire.Duration)(&f.debounceMax)
		}
	}
	j.MetaPairs, j.Tags = f.meta, f.tags
	return j
}

// options returns the EnqueueOptions the flags in fs describe, for
// enqueue; a bad value is a usage error naming its flag.
func (f *jobFlags) options(fs *pflag.FlagSet) (*hopper.EnqueueOptions, error) {
	j := f.document(fs)
	j.Kind = "-" // checked by the kind's command
	r, err := j.Request(time.Now())
	if err != nil {
		return nil, flagError(fs, err)
	}
	return r.Options, nil
}

// flagOf names the flag or argument behind a field of wire's documents and
// of the library's options.
var flagOf = map[string]string{
	"queue": "--queue", "priority": "--priority", "max_attempts": "--max-attempts", "timeout": "--timeout",
	"retry": "--retry-backoff", "delay": "--delay", "run_at": "--at", "unique_key": "--unique", "key": "--key",
	"debounce": "--debounce", "debounce.period": "--debounce", "debounce.max_wait": "--debounce-max",
	"meta": "--meta", "tags": "--tag",
	"cron": "--cron", "time_zone": "--tz", "every": "--every", "fixed_delay": "--fixed-delay",
	"overlap": "--overlap", "name": "NAME", "catch_up": "--catch-up", "catch_up_window": "--catch-up-window", "catch_up_max": "--catch-up-max", "jitter": "--jitter", "jitter_mode": "--jitter-mode",
	"from": "--from", "to": "--to",
	"monitor.start_grace": "--start-grace", "monitor.max_duration": "--max-duration", "monitor.alert_after_failures": "--alert-after-failures",
	"monitor.pause_on_failures": "--pause-on-failures", "monitor.channels": "--notify",
}

// flagError makes err, a *hopper.FieldError about a field a flag gave, a
// usage error naming the flag and its value ("bad --max-attempts 0: …");
// other errors are enqueueError's.
func flagError(fs *pflag.FlagSet, err error) error {
	var fe *hopper.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	field := strings.TrimPrefix(fe.Field, "options.")
	name := flagOf[field]
	if base, _, ok := strings.Cut(field, "."); ok && base == "retry" {
		name = flagOf[base]
	}
	switch {
	case name == "":
		return enqueueError(err)
	case !strings.HasPrefix(name, "--"):
		return usagef("bad %s: %s", name, fe.Reason)
	}
	v := ""
	if fl := fs.Lookup(name[2:]); fl != nil && fl.Changed {
		v = fl.Value.String()
	}
	if v == "" {
		return usagef("bad %s: %s", name, fe.Reason)
	}
	return usagef("bad %s %s: %s", name, v, fe.Reason)
}

// kindFlags builds the args of one built-in kind from its flags and
// positional arguments.
type kindFlags interface {
	register(fs *pflag.FlagSet)
	args(pos []string) (any, error)
}

// execFlags describe an exec job.
type execFlags struct {
	env       []string
	dir       string
	stdin     string
	permCodes []int
}

func (f *execFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.env, "env", nil, "environment variable KEY=VALUE for the command (repeatable)")
	fs.StringVar(&f.dir, "dir", "", "working directory of the command (default: the server's)")
	fs.StringVar(&f.stdin, "stdin", "", "text written to the command's standard input (default: none, the null device)")
	fs.IntSliceVar(&f.permCodes, "permanent-exit-codes", nil, "exit codes that fail the job at once, without retries, e.g. 2,64")
}

func (f *execFlags) args(pos []string) (any, error) {
	if len(pos) == 0 {
		return nil, usagef("exec needs a command: exec [flags] -- COMMAND [ARGS...]")
	}
	for _, c := range f.permCodes {
		if c < 1 || c > 255 {
			return nil, usagef("bad --permanent-exit-codes: %d is not an exit code of a failure (1 to 255)", c)
		}
	}
	a := kinds.ExecArgs{Command: pos[0], Args: pos[1:], Env: f.env, Dir: f.dir, Stdin: f.stdin, PermanentExitCodes: f.permCodes}
	if err := a.Validate(); err != nil {
		return nil, usageError{err}
	}
	return a, nil
}

// httpFlags describe an http job.
type httpFlags struct {
	url      string
	method   string
	headers  []string
	data     string
	retry4xx bool
}

func (f *httpFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.url, "url", "", "URL to request (http or https; required)")
	fs.StringVar(&f.method, "method", "", "HTTP method (default GET, or POST with --data)")
	fs.StringArrayVar(&f.headers, "header", nil, `request header "Name: value" (repeatable)`)
	fs.StringVar(&f.data, "data", "", "request body: a string, or @FILE to read it from a file")
	fs.BoolVar(&f.retry4xx, "retry-4xx", false, "retry on 4xx responses too (by default a 4xx other than 408 and 429 fails the job at once)")
}

func (f *httpFlags) args(pos []string) (any, error) {
	if len(pos) > 0 {
		return nil, usagef("http takes no arguments (got %q); give the URL with --url", pos[0])
	}
	if f.url == "" {
		return nil, usagef("http needs --url URL")
	}
	a := kinds.HTTPArgs{URL: f.url, Method: strings.ToUpper(f.method), RetryOn4xx: f.retry4xx}
	if strings.HasPrefix(f.data, "@") {
		b, err := os.ReadFile(f.data[1:])
		if err != nil {
			return nil, usagef("bad --data: %v", err)
		}
		a.Body = string(b)
	} else {
		a.Body = f.data
	}
	if a.Method == "" && a.Body != "" {
		a.Method = "POST"
	}
	for _, h := range f.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usagef(`bad --header %q: want "Name: value"`, h)
		}
		if a.Headers == nil {
			a.Headers = make(map[string]string)
		}
		a.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if err := a.Validate(); err != nil {
		return nil, usageError{err}
	}
	return a, nil
}

// newKindFlags returns the flags of a built-in kind, or nil.
func newKindFlags(kind string) kindFlags {
	switch kind {
	case kinds.KindExec:
		return &execFlags{}
	case kinds.KindHTTP:
		return &httpFlags{}
	}
	return nil
}

type pflagFlag = pflag.Flag
