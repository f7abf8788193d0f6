// Package cli is the hopper command: a durable job scheduler's server,
// client and benchmark on one store (by default a SQLite file). Run builds
// the command tree with cobra and runs it; cmd/hopper is a thin main around
// it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hopperq/hopper/store"
	"github.com/spf13/cobra"
)

// Exit codes, the same rule for every command (docs/cli.md, "Exit codes").
const (
	// ExitOK: every target ended in the state the command asks for,
	// including targets that already were in it.
	ExitOK = 0
	// ExitError: the command failed for at least one target (not found,
	// or in a state where the action does not apply), or an operational
	// error (database, I/O).
	ExitError = 1
	// ExitUsage: the command line or the input was wrong; nothing changed.
	ExitUsage = 2
)

// DefaultDB is the database used when neither --db nor HOPPER_DB is set.
const DefaultDB = "./hopper.db"

// IO is where a run reads and writes.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// app holds the global flags and the streams of one run.
type app struct {
	IO
	db string
	// dbEnv is $HOPPER_DB when it set db's default, else "".
	dbEnv string
	json  bool
	// self is how the user runs this program again, in the commands hints
	// suggest: "hopper" for Run, selfCommand() for Main.
	self string
	// signals returns the channel on which SIGINT and SIGTERM arrive and a
	// function that stops delivering them. Tests replace it.
	signals func() (<-chan os.Signal, func())
}

// usageError is an error in the command line or the input: it exits with
// ExitUsage, and nothing was changed.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// dbFrom names where the database a uses was given, for errors:
// "$HOPPER_DB" when it came from there, else "--db".
func (a *app) dbFrom() string {
	if a.dbEnv != "" && a.db == a.dbEnv {
		return "$HOPPER_DB"
	}
	return "--db"
}

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// reportedError is the failure of a command that already reported each
// failed target on stderr: it exits with ExitError, printing msg if set.
type reportedError struct{ msg string }

func (e reportedError) Error() string { return e.msg }

// Main runs the hopper command on the process's arguments and streams and
// returns its exit code.
func Main() int {
	a := &app{IO: IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, signals: notifySignals, self: selfCommand()}
	return a.run(context.Background(), os.Args[1:])
}

// Run runs the hopper command with args (without the program name) and
// returns its exit code. Errors go to io.Err as "hopper: ...". Long-running
// commands (serve, demo) also stop when ctx is done. Hints name the
// program "hopper".
func Run(ctx context.Context, args []string, stdio IO) int {
	return (&app{IO: stdio, signals: notifySignals, self: "hopper"}).run(ctx, args)
}

// notifySignals delivers SIGINT and SIGTERM on a channel instead of letting
// them end the process.
func notifySignals() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}

func (a *app) run(ctx context.Context, args []string) int {
	root := a.root()
	root.SetArgs(append([]string{}, args...))
	root.SetIn(a.In)
	root.SetOut(a.Out)
	root.SetErr(a.Err)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var re reportedError
	if errors.As(err, &re) {
		if re.msg != "" {
			fmt.Fprintf(a.Err, "hopper: %s\n", re.msg)
		}
		return ExitError
	}
	code := ExitError
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
		code = ExitUsage
	}
	fmt.Fprintf(a.Err, "hopper: %v\n", err)
	if code == ExitUsage && cmd != nil {
		fmt.Fprintf(a.Err, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "hopper",
		Short: "Hopper: a durable job scheduler",
		Long: `Hopper is a durable job scheduler. Jobs, their attempts and recurring
schedules live in one store: by default the SQLite file ./hopper.db; --db
(or $HOPPER_DB) takes another file or a store URL: sqlite:/var/lib/hopper.db,
or postgres://user@host/db?hopper_schema=hopper for a PostgreSQL database
that servers on many machines share. "hopper serve" works them; the other
commands enqueue and inspect them, and may run while a server is running.

Exit codes: 0 every target ended as asked (or already was); 1 the command
failed for at least one target, or an operational error; 2 a usage error,
nothing changed.

New here? Run "hopper demo".`,
		Version:           versionText(),
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		Args:              cobra.ArbitraryArgs,
		RunE:              groupRun,
	}
	root.SetVersionTemplate("hopper {{.Version}}\n")
	db := DefaultDB
	if v, ok := os.LookupEnv("HOPPER_DB"); ok && v != "" {
		db, a.dbEnv = v, v
	}
	root.PersistentFlags().StringVar(&a.db, "db", db, "database: a SQLite file path, or a store URL: sqlite:PATH or postgres://... (env HOPPER_DB)")
	root.PersistentFlags().Lookup("db").DefValue = store.Redacted(db) // as help shows it: without $HOPPER_DB's password
	root.PersistentFlags().BoolVar(&a.json, "json", false, "print JSON instead of tables, for scripts")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		a.serveCmd(),
		a.migrateCmd(),
		a.enqueueCmd(),
		a.jobsCmd(),
		a.dlqCmd(),
		a.scheduleCmd(),
		a.crontabCmd(),
		a.queueCmd(),
		a.statsCmd(),
		a.serversCmd(),
		a.alertsCmd(),
		a.channelCmd(),
		a.checkCmd(),
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
		return usagef("%s takes no arguments, got %q", subcommand(cmd), args[0])
	}
	return nil
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < n:
			return usagef("%s needs %s", subcommand(cmd), what)
		case len(args) > n:
			return usagef("%s takes only %s, got %d arguments: %s", subcommand(cmd), what, len(args), strings.Join(args, " "))
		}
		return nil
	}
}

// subcommand is cmd's path without the root's name ("jobs get"), for
// errors, which "hopper: " already begins.
func subcommand(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("%s needs %s", subcommand(cmd), what)
		}
		return nil
	}
}
