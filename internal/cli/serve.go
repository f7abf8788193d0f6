package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hopperq/hopper"
	"github.com/spf13/cobra"
)

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, usagef("bad --log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

func (a *app) serveCmd() *cobra.Command {
	var (
		workers         int
		queues, level   string
		shutdownTimeout time.Duration
	)
	c := &cobra.Command{
		Use:   "serve [--workers N] [--queues q1,q2:LIMIT] [--log-level LEVEL] [--shutdown-timeout D]",
		Short: "Run jobs until interrupted",
		Long: `Run the jobs of the database with the built-in kinds (exec, http), fire the
recurring schedules, rescue the jobs of servers that died, and clean up old
finished jobs, until SIGINT or SIGTERM.

Every transition is logged to stderr: started and completed at debug,
failed attempts at warn, dead jobs at error.

On the first signal it stops taking jobs and waits up to --shutdown-timeout
for running jobs; those still running then are cancelled and go back to
waiting without losing an attempt. A second signal stops at once. Several
servers may share one database.`,
		Example: `  hopper serve
  hopper serve --workers 32 --queues default,emails:4 --log-level info`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			lvl, err := parseLevel(level)
			if err != nil {
				return err
			}
			qs, err := parseQueues(queues)
			if err != nil {
				return err
			}
			if workers < 1 {
				return usagef("bad --workers %d: must be at least 1", workers)
			}
			if shutdownTimeout < 0 {
				return usagef("bad --shutdown-timeout %s: must not be negative", shutdownTimeout)
			}
			log := slog.New(slog.NewTextHandler(a.Err, &slog.HandlerOptions{Level: lvl}))
			return a.serve(cmd.Context(), log, workers, qs, shutdownTimeout)
		},
	}
	c.Flags().IntVar(&workers, "workers", 10, "jobs run at once")
	c.Flags().StringVar(&queues, "queues", "", "work only these queues, each with an optional limit of jobs at once (default: every queue)")
	c.Flags().StringVar(&level, "log-level", "debug", "debug (every transition), info, warn (failures) or error (dead jobs)")
	c.Flags().DurationVar(&shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long running jobs may finish")
	return c
}

func (a *app) serve(ctx context.Context, log *slog.Logger, workers int, qs map[string]hopper.QueueConfig, shutdownTimeout time.Duration) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	s, err := a.open(ctx, openOpts{create: true, config: func(c *hopper.Config) {
		c.Concurrency, c.Queues, c.Logger = workers, qs, log
	}})
	if err != nil {
		return err
	}
	if err := s.Start(); err != nil {
		s.closeQuick()
		return err
	}
	var qnames []string
	for q, c := range qs {
		if c.MaxWorkers > 0 {
			q = fmt.Sprintf("%s:%d", q, c.MaxWorkers)
		}
		qnames = append(qnames, q)
	}
	slices.Sort(qnames)
	if qnames == nil {
		qnames = []string{"(all)"}
	}
	log.Info("hopper serving", "db", s.store.Path(), "workers", workers, "queues", strings.Join(qnames, ","),
		"kinds", "exec,http", "worker_id", s.WorkerID(), "pid", os.Getpid())

	var why string
	select {
	case sig := <-sigs:
		why = sig.String()
	case <-ctx.Done():
		why = "context done"
	}
	log.Info("shutting down: waiting for running jobs (signal again to stop at once)", "reason", why, "timeout", shutdownTimeout)
	stopCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	go func() {
		select {
		case sig := <-sigs:
			log.Warn("second signal: stopping at once; running jobs go back to waiting", "signal", sig.String())
			cancel()
		case <-stopCtx.Done():
		}
	}()
	start := time.Now()
	err = s.close(stopCtx)
	if errors.Is(stopCtx.Err(), context.DeadlineExceeded) {
		log.Warn("shutdown timeout: running jobs were cancelled and went back to waiting")
	}
	log.Info("stopped", "took", time.Since(start).Round(time.Millisecond))
	return err
}
