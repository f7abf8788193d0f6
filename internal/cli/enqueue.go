package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/kinds"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const enqueueLong = `Enqueue a job: a command to run (exec) or an HTTP request to make (http).
The job is on disk when the command returns; "hopper serve" runs it.

The job flags (--queue, --priority, --delay, ...) go before the kind, the
kind's flags after it. Everything after "--" is the command and its
arguments; no shell is involved (use sh -c '...' for one).

It prints the job's ID (the job itself with --json). A job whose --unique
key is held by a waiting or running job is not enqueued: the ID of that job
is printed instead, and a note goes to stderr. With --debounce PERIOD as
well, a job waiting with the key takes this job's args and runs PERIOD after
the latest enqueue (but no later than --debounce-max after the first): its
ID is printed, and a note goes to stderr.

With --bulk it reads jobs as JSON lines from stdin, one per line:

  {"kind":"exec","args":{"command":"echo","args":["hi"]},"queue":"q","priority":1,
   "delay":"5s","run_at":"2030-01-02T15:04:05Z","max_attempts":3,"timeout":"30s",
   "unique_key":"k","key":"tenant=42","debounce":{"period":"5s","max_wait":"1m"},
   "retry_backoff":"fixed:5s"}

Only kind is required. Kinds other than exec and http are refused (a typo
would wait forever) unless listed in --external-kinds: kinds that programs
of yours, using the library, run. They are enqueued in batches of 1,000,
each batch at once or not at all; it prints how many were enqueued. A bad
line stops it, naming the line (the batches before it stay enqueued).`

func (a *app) enqueueCmd() *cobra.Command {
	var jf jobFlags
	var bulk bool
	var external []string
	c := &cobra.Command{
		Use:   "enqueue [job flags] (exec [flags] -- COMMAND [ARGS...] | http --url URL [flags] | --bulk)",
		Short: "Enqueue a job (exec or http), or many from JSON lines with --bulk",
		Long:  enqueueLong,
		Example: `  hopper enqueue exec -- echo hello
  hopper enqueue --queue reports --priority -1 --max-attempts 3 exec --env TZ=UTC -- ./report.sh daily
  hopper enqueue --delay 10m --retry-backoff list:5s,30s,300s http --url https://example.com/hook --data '{"a":1}' --header 'Content-Type: application/json'
  hopper enqueue --at 2030-01-02T15:04:05Z --unique nightly-backup exec -- backup.sh
  hopper enqueue --unique reindex:42 --debounce 5s --debounce-max 1m exec -- ./reindex 42
  hopper enqueue --queue api --key tenant=42 http --url https://example.com/sync
  hopper enqueue --bulk < jobs.jsonl
  hopper enqueue --bulk --external-kinds send_email,resize_image < jobs.jsonl`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !bulk {
				if cmd.Flags().Changed("external-kinds") {
					return usagef("--external-kinds applies to --bulk only")
				}
				return usagef("say what to enqueue: enqueue exec -- COMMAND, enqueue http --url URL, or enqueue --bulk < FILE")
			}
			if f := jobFlagGiven(cmd); f != "" {
				return usagef("--bulk takes the job options from each line, not from flags (got --%s)", f)
			}
			for _, k := range external {
				if err := job.CheckName("kind", k); err != nil {
					return usagef("bad --external-kinds %q: %v", k, err)
				}
			}
			return a.bulkEnqueue(cmd.Context(), external)
		},
	}
	jf.register(c.PersistentFlags(), false)
	c.Flags().BoolVar(&bulk, "bulk", false, "read jobs as JSON lines from stdin")
	c.Flags().StringSliceVar(&external, "external-kinds", nil, "with --bulk: kinds besides exec and http that other processes run, e.g. send_email,resize")
	for _, kind := range []string{kinds.KindExec, kinds.KindHTTP} {
		c.AddCommand(a.enqueueKindCmd(kind, &jf))
	}
	return c
}

// jobFlagGiven returns the name of a job flag given to enqueue --bulk, or "".
func jobFlagGiven(cmd *cobra.Command) string {
	found := ""
	cmd.Flags().Visit(func(f *pflagFlag) {
		switch f.Name {
		case "bulk", "db", "json", "external-kinds":
		default:
			found = f.Name
		}
	})
	return found
}

func (a *app) enqueueKindCmd(kind string, jf *jobFlags) *cobra.Command {
	kf := newKindFlags(kind)
	c := &cobra.Command{
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			jobArgs, err := kf.args(args)
			if err != nil {
				return err
			}
			opts, err := jf.options(cmd.Flags())
			if err != nil {
				return err
			}
			return a.enqueueOne(cmd.Context(), cmd.Flags(), kind, jobArgs, opts)
		},
	}
	switch kind {
	case kinds.KindExec:
		c.Use = "exec [flags] -- COMMAND [ARGS...]"
		c.Short = "Enqueue a command to run (no shell)"
		c.Long = `Enqueue a job that runs COMMAND with ARGS, directly (no shell), in a process
group of its own. A non-zero exit fails the attempt, which is retried; exit
codes listed in --permanent-exit-codes, and a command that cannot be found,
send the job to the dead-letter queue at once. On timeout or cancellation the
whole process group is killed. The job's result holds the exit code and the
last 4 KiB of stdout and stderr.

The command gets a clean environment (not the server's) plus --env, and
runs as the server's user or its --exec-user. With $` + ExecAllowEnv + ` set
(comma-separated absolute paths or patterns, as serve --exec-allow), a
COMMAND that resolves to a program outside it is refused.`
		c.Example = `  hopper enqueue exec -- echo hello
  hopper enqueue --timeout 5m exec --dir /srv/app --env RAILS_ENV=production -- bin/rake cleanup
  hopper enqueue exec --permanent-exit-codes 2,64 -- sh -c 'grep -q x file || exit 2'`
		c.Flags().SetInterspersed(false) // flags after COMMAND are its own
	case kinds.KindHTTP:
		c.Use = "http --url URL [flags]"
		c.Short = "Enqueue an HTTP request"
		c.Long = `Enqueue a job that makes one HTTP request. A 2xx or 3xx response completes it;
a 5xx, a timeout or a connection error is retried; a 4xx (but 408 and 429)
sends it to the dead-letter queue at once unless --retry-4xx. The result
holds the status, the duration and the first 4 KiB of the body.`
		c.Example = `  hopper enqueue http --url https://example.com/health
  hopper enqueue http --url https://example.com/hook --header 'Authorization: Bearer x' --data @payload.json`
	}
	kf.register(c.Flags())
	return c
}

// enqueueOne enqueues one job and prints its ID (or the job, with --json).
func (a *app) enqueueOne(ctx context.Context, fs *pflag.FlagSet, kind string, args any, opts *hopper.EnqueueOptions) error {
	return a.withSession(ctx, openOpts{access: create}, func(s *session) error {
		res, err := s.Enqueue(ctx, kind, args, opts)
		if err != nil {
			return flagError(fs, err)
		}
		switch {
		case res.Duplicate:
			fmt.Fprintf(a.Err, "hopper: not enqueued: job %d (%s) holds unique key %q\n", res.ID, res.State, opts.UniqueKey)
		case res.Debounced:
			fmt.Fprintf(a.Err, "hopper: debounced: merged into job %d (%s), waiting with key %q\n", res.ID, res.State, opts.UniqueKey)
		}
		if !a.json {
			_, err := fmt.Fprintln(a.Out, res.ID)
			return err
		}
		j, err := s.Get(ctx, res.ID)
		if err != nil {
			return err
		}
		return printJSON(a.Out, j)
	})
}

// enqueueError makes invalid input a usage error.
func enqueueError(err error) error {
	var fe *hopper.FieldError
	if errors.As(err, &fe) {
		return usagef("invalid job: %v", fe)
	}
	return err
}
