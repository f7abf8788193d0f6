// Package cli is the hopper command: a durable job scheduler's server,
// client and benchmark on one SQLite file. Run builds the command tree with
// cobra and runs it; cmd/hopper is a thin main around it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1 // the command failed
	ExitUsage = 2 // the command line was wrong
)

// DefaultDB is the database file used when neither --db nor HOPPER_DB is set.
const DefaultDB = "./hopper.db"

// IO is where a run reads and writes.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// app holds the global flags and the streams of one run.
type app struct {
	IO
	db   string
	json bool
}

// usageError is an error in the command line: it exits with ExitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// Main runs the hopper command on the process's arguments and streams and
// returns its exit code.
func Main() int {
	return Run(context.Background(), os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
}

// Run runs the hopper command with args (without the program name) and
// returns its exit code. Errors go to io.Err as "hopper: ...". Long-running
// commands (serve, demo) also stop when ctx is done.
func Run(ctx context.Context, args []string, stdio IO) int {
	a := &app{IO: stdio}
	root := a.root()
	root.SetArgs(append([]string{}, args...))
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitError
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
		code = ExitUsage
	}
	fmt.Fprintf(stdio.Err, "hopper: %v\n", err)
	if code == ExitUsage && cmd != nil {
		fmt.Fprintf(stdio.Err, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "hopper",
		Short: "Hopper: a durable job scheduler on one SQLite file",
		Long: `Hopper is a durable job scheduler. Jobs, their attempts and recurring
schedules live in one SQLite file (--db, default ./hopper.db, or $HOPPER_DB).
"hopper serve" works them; the other commands enqueue and inspect them, and
may run while a server is running.

New here? Run "hopper demo".`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		Args:              cobra.ArbitraryArgs,
		RunE:              groupRun,
	}
	db := DefaultDB
	if v, ok := os.LookupEnv("HOPPER_DB"); ok && v != "" {
		db = v
	}
	root.PersistentFlags().StringVar(&a.db, "db", db, "database file (env HOPPER_DB)")
	root.PersistentFlags().BoolVar(&a.json, "json", false, "print JSON instead of tables, for scripts")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		a.serveCmd(),
		a.enqueueCmd(),
		a.jobsCmd(),
		a.dlqCmd(),
		a.scheduleCmd(),
		a.statsCmd(),
		a.benchCmd(),
		a.demoCmd(),
	)
	return root
}

// group returns a command that only holds subcommands: run alone it prints
// its help, and an unknown subcommand is a usage error.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRun,
	}
	c.AddCommand(subs...)
	return c
}

func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return cmd.Help()
}

// Argument validators returning usage errors.

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		if cmd.HasSubCommands() {
			return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
		}
		return usagef("%s takes no arguments, got %q", cmd.CommandPath(), args[0])
	}
	return nil
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s needs %s", cmd.CommandPath(), what)
		}
		return nil
	}
}
