package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hopperq/hopper"
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
	backoff     string
}

// register adds the flags to fs; a schedule's jobs take no delay, run time
// or unique key.
func (f *jobFlags) register(fs *pflag.FlagSet, forSchedule bool) {
	fs.StringVar(&f.queue, "queue", "", `queue of the job (default "default")`)
	fs.IntVar(&f.priority, "priority", 0, fmt.Sprintf("priority: lower runs first, from %d to %d", hopper.MinPriority, hopper.MaxPriority))
	fs.IntVar(&f.maxAttempts, "max-attempts", 0, fmt.Sprintf("attempts before the job goes to the dead-letter queue, 1 to %d (default %d)", hopper.MaxAttemptsLimit, hopper.DefaultMaxAttempts))
	if forSchedule {
		fs.DurationVar(&f.timeout, "timeout", 0, fmt.Sprintf("timeout of each attempt, e.g. 30s (default: the schedule's period, the time to the next tick, at least %s)", roughDuration(hopper.MinScheduledTimeout)))
	} else {
		fs.DurationVar(&f.timeout, "timeout", 0, "timeout of each attempt, e.g. 30s (default none)")
	}
	fs.StringVar(&f.backoff, "retry-backoff", "", "delay between attempts: "+backoffForms)
	if !forSchedule {
		fs.DurationVar(&f.delay, "delay", 0, "run no earlier than this long from now, e.g. 10m")
		fs.StringVar(&f.at, "at", "", "run no earlier than this RFC 3339 time, e.g. 2030-01-02T15:04:05Z")
		fs.StringVar(&f.unique, "unique", "", "unique key: while a job with this key waits or runs, enqueue returns that job instead")
	}
}

// options returns the EnqueueOptions the flags in fs describe. A value the
// library reads as "unset" (0, "") given explicitly is refused rather than
// silently replaced by a default.
func (f *jobFlags) options(fs *pflag.FlagSet) (*hopper.EnqueueOptions, error) {
	set := fs.Changed
	o := &hopper.EnqueueOptions{
		Queue: f.queue, Priority: f.priority, MaxAttempts: f.maxAttempts,
		Timeout: f.timeout, UniqueKey: f.unique,
	}
	switch {
	case set("queue") && strings.TrimSpace(f.queue) == "":
		return nil, usagef(`bad --queue %q: must not be empty (leave it out for the queue "default")`, f.queue)
	case set("max-attempts") && f.maxAttempts < 1:
		return nil, usagef("bad --max-attempts %d: must be at least 1 (leave it out for the default, %d)", f.maxAttempts, hopper.DefaultMaxAttempts)
	case set("timeout") && f.timeout <= 0:
		if fs.Lookup("unique") == nil { // schedule add
			return nil, usagef("bad --timeout %s: must be positive (leave it out and each job times out after the schedule's period, at least %s)", f.timeout, roughDuration(hopper.MinScheduledTimeout))
		}
		return nil, usagef("bad --timeout %s: must be positive (leave it out for no timeout)", f.timeout)
	case set("unique") && f.unique == "":
		return nil, usagef("bad --unique: the key must not be empty")
	case set("retry-backoff") && f.backoff == "":
		return nil, usagef("bad --retry-backoff: empty; want %s", backoffForms)
	case set("delay") && set("at"):
		return nil, usagef("give --delay or --at, not both")
	}
	if set("delay") {
		t, err := delayTime("--delay", f.delay)
		if err != nil {
			return nil, err
		}
		if f.delay > 0 {
			o.RunAt = t
		}
	}
	if set("at") {
		t, err := parseAt("--at", f.at)
		if err != nil {
			return nil, err
		}
		o.RunAt = t
	}
	var err error
	if o.Retry, err = parseBackoff(f.backoff); err != nil {
		return nil, err
	}
	return o, nil
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
	permCodes []int
}

func (f *execFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.env, "env", nil, "environment variable KEY=VALUE for the command (repeatable)")
	fs.StringVar(&f.dir, "dir", "", "working directory of the command (default: the server's)")
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
	a := kinds.ExecArgs{Command: pos[0], Args: pos[1:], Env: f.env, Dir: f.dir, PermanentExitCodes: f.permCodes}
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
