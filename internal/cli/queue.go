package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/hopperq/hopper"

	"github.com/hopperq/hopper/internal/statsview"
	"github.com/spf13/cobra"
)

func (a *app) queueCmd() *cobra.Command {
	return group("queue", "Queues: list them with their counts, pause and resume them, set their limits",
		a.queueListCmd(),
		a.queueSetCmd(),
		a.queuePauseCmd("pause", "Pause a queue: running jobs finish, none of its jobs starts until resumed"),
		a.queuePauseCmd("resume", "Resume a paused queue: its jobs start again at once"),
	)
}

func (a *app) queueListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the queues: paused or active, their jobs by state, the jobs a pause holds",
		Long: `List every queue that has jobs or is paused, by name: its status (active or
paused, and since when), its jobs waiting, running and finished, HELD, the
jobs ready to run that the queue holds back (its pause, its limit, its
rate), and KEY HELD, those that their keys hold back (a key paused, held,
at its limit or throttled).

A pause lives in the database: every server working it obeys it, and it
survives restarts, until "hopper queue resume".

--json prints each queue with its counts by state.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				qs, err := s.Queues(ctx)
				if err != nil {
					return err
				}
				views := statsview.QueuesOf(qs)
				if a.json {
					return printJSON(a.Out, views)
				}
				if len(views) == 0 {
					fmt.Fprintln(a.Err, "no queues: no job has been enqueued")
					return nil
				}
				t := newTable(a.Out, "QUEUE", "STATUS", "LIMIT", "PER KEY", "RATE", "WAITING", "HELD", "KEY HELD", "RUNNING", "COMPLETED", "CANCELLED", "DEAD")
				for _, v := range views {
					status, limit, perKey := "active", "-", "-"
					switch {
					case v.Paused:
						status = "paused since " + clock(*v.PausedAt)
					case v.Concurrency > 0 && v.Slots >= v.Concurrency:
						status = "at its limit"
					case v.ThrottledUntil != nil:
						status = "throttled until " + clock(*v.ThrottledUntil)
					}
					if v.Concurrency > 0 {
						limit = fmt.Sprintf("%d/%d", v.Slots, v.Concurrency)
					}
					if v.KeyConcurrency > 0 {
						perKey = fmt.Sprint(v.KeyConcurrency)
					}
					if v.KeyRate != "" {
						r := v.KeyRate
						if v.KeyBurst > 1 {
							r += fmt.Sprintf(" burst %d", v.KeyBurst)
						}
						if v.KeyDrop {
							r += " drop"
						}
						if perKey == "-" {
							perKey = r
						} else {
							perKey += ", " + r
						}
					}
					t.row(v.Name, status, limit, perKey, rateText(v), v.Waiting, v.Held, v.KeyHeld, v.Running, v.Counts["completed"], v.Counts["cancelled"], v.Counts["dead"])
				}
				return t.flush()
			})
		},
	}
}

func (a *app) queueSetCmd() *cobra.Command {
	var concurrency, keyConcurrency, burst, keyBurst int
	var rateFlag, keyRateFlag string
	var drop, keyDrop bool
	cmd := &cobra.Command{
		Use:   "set NAME [--concurrency N] [--key-concurrency N] [--rate N/DURATION [--burst N] [--drop]] [--key-rate N/DURATION [--key-burst N] [--key-drop]]",
		Short: "Set a queue's limits, shared by every server working the database",
		Long: `Set a queue's limits, shared by every server working the database.

--concurrency N caps how many of the queue's jobs run at once across every
server (0 removes the cap). Each claim takes at most the free slots,
counted by the database in the same transaction as every start and end of
a job; a job rescued from a dead server gives its slot back. A server's own
cap (serve --queue NAME:N) still applies within it. Lowering the limit
below the running jobs stops no job: new ones wait until they fall under
it.

--key-concurrency N caps how many jobs of one key (enqueue --key) run at
once across every server (0 removes the cap); the queue then serves its
keys in turn, so one key's backlog does not hold the others back. A job's
slot is taken at its claim and given back when it ends or is rescued.

--rate N/DURATION throttles the queue's starts across every server: at
most N per DURATION (100/1s, 5/1m, 10/s), --burst N of them at once after
a quiet spell (default 1). It is exact over any sliding window (GCRA: at
most burst + window/(DURATION/N) starts in any window), checked in each
claim's transaction at the database's time. The excess waits and starts as
the rate allows; with --drop it is dropped instead: cancelled with the
error "dropped: queue NAME over its rate N/DURATION", never run.
--rate none removes the throttle.

--key-rate N/DURATION throttles the starts of each key (enqueue --key) the
same way, across every server: at most N per DURATION of one key,
--key-burst N of them at once (default 1). Each key keeps one small row
while it starts jobs, gone about two periods after its last start. A
throttled key waits as a key at its limit does: the queue's other keys go
on. With --key-drop a key's excess is dropped instead: a job of the key
that a claim would start but for the key's rate is cancelled with the
error "dropped: key KEY of queue NAME over its rate N/DURATION", never
run; jobs that wait for anything else (a key's limit or pause, the
queue's) are not. --key-rate N/DURATION without --key-drop holds the
excess again; --key-rate none removes the rate per key.

Exit code: 0 if the queue has the limits given.`,
		Args: exactArgs(1, "a queue NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, name := cmd.Context(), args[0]
			setC, setK, setRate := cmd.Flags().Changed("concurrency"), cmd.Flags().Changed("key-concurrency"), cmd.Flags().Changed("rate")
			setKeyRate := cmd.Flags().Changed("key-rate")
			if !setRate && (cmd.Flags().Changed("burst") || drop) {
				return usagef("--burst and --drop go with --rate N/DURATION")
			}
			if !setKeyRate && (cmd.Flags().Changed("key-burst") || keyDrop) {
				return usagef("--key-burst and --key-drop go with --key-rate N/DURATION")
			}
			if !setC && !setK && !setRate && !setKeyRate {
				return usagef("queue set needs --concurrency N or --key-concurrency N (0 removes a limit), or --rate N/DURATION or --key-rate N/DURATION (none removes it)")
			}
			var rt hopper.Rate
			if setRate {
				var err error
				if rt, err = hopper.ParseRate(rateFlag); err != nil {
					return usagef("bad --rate %q: %s", rateFlag, reason(err))
				}
				if rt.N > 0 {
					rt.Burst, rt.Drop = burst, drop
				}
				if err := rt.Validate(); err != nil {
					return usagef("bad --%s: %s", fieldOf(err), reason(err))
				}
			}
			var krt hopper.Rate
			if setKeyRate {
				var err error
				if krt, err = hopper.ParseRate(keyRateFlag); err != nil {
					return usagef("bad --key-rate %q: %s", keyRateFlag, reason(err))
				}
				if krt.N > 0 {
					krt.Burst, krt.Drop = keyBurst, keyDrop
				}
				if err := krt.Validate(); err != nil {
					return usagef("bad --key-%s: %s", fieldOf(err), reason(err))
				}
			}
			return a.withSession(ctx, openOpts{access: create}, func(s *session) error {
				var err error
				if setC {
					err = s.SetQueueConcurrency(ctx, name, concurrency)
				}
				if err == nil && setK {
					err = s.SetQueueKeyConcurrency(ctx, name, keyConcurrency)
				}
				if err == nil && setRate {
					err = s.SetQueueRate(ctx, name, rt)
				}
				if err == nil && setKeyRate {
					err = s.SetQueueKeyRate(ctx, name, krt)
				}
				if fe := (*hopper.FieldError)(nil); errors.As(err, &fe) {
					switch fe.Field {
					case "concurrency":
						return usagef("bad --concurrency %d: %s", concurrency, fe.Reason)
					case "key_concurrency":
						return usagef("bad --key-concurrency %d: %s", keyConcurrency, fe.Reason)
					}
					return usagef("bad queue NAME %q: %s", name, fe.Reason)
				}
				if err != nil {
					return err
				}
				if a.json {
					out := map[string]any{"queue": name}
					if setC {
						out["concurrency"] = concurrency
					}
					if setK {
						out["key_concurrency"] = keyConcurrency
					}
					if setRate {
						out["rate"], out["burst"], out["drop"] = rt.String(), rt.Burst, rt.Drop
					}
					if setKeyRate {
						out["key_rate"], out["key_burst"], out["key_drop"] = krt.String(), krt.Burst, krt.Drop
					}
					return printJSON(a.Out, out)
				}
				switch {
				case !setC:
				case concurrency == 0:
					fmt.Fprintf(a.Out, "queue %s: no concurrency limit\n", name)
				default:
					fmt.Fprintf(a.Out, "queue %s: at most %d running at once across every server\n", name, concurrency)
				}
				switch {
				case !setK:
				case keyConcurrency == 0:
					fmt.Fprintf(a.Out, "queue %s: no limit per key\n", name)
				default:
					fmt.Fprintf(a.Out, "queue %s: at most %d running at once of each key across every server\n", name, keyConcurrency)
				}
				switch {
				case !setRate:
				case rt.N == 0:
					fmt.Fprintf(a.Out, "queue %s: no rate limit\n", name)
				default:
					excess := "waits"
					if rt.Drop {
						excess = "is dropped"
					}
					fmt.Fprintf(a.Out, "queue %s: at most %s starts across every server, %d at once; the excess %s\n",
						name, rt, max(rt.Burst, 1), excess)
				}
				switch {
				case !setKeyRate:
				case krt.N == 0:
					fmt.Fprintf(a.Out, "queue %s: no rate limit per key\n", name)
				default:
					excess := "waits"
					if krt.Drop {
						excess = "is dropped"
					}
					fmt.Fprintf(a.Out, "queue %s: at most %s starts of each key across every server, %d at once; a key's excess %s\n",
						name, krt, max(krt.Burst, 1), excess)
				}
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&concurrency, "concurrency", 0, "at most N jobs of the queue running at once across every server (0: no limit)")
	cmd.Flags().IntVar(&keyConcurrency, "key-concurrency", 0, "at most N jobs of one key (enqueue --key) running at once across every server (0: no limit)")
	cmd.Flags().StringVar(&rateFlag, "rate", "", "at most N starts per DURATION across every server, as N/DURATION (100/1s); none removes the throttle")
	cmd.Flags().IntVar(&burst, "burst", 0, "with --rate: how many may start at once (default 1)")
	cmd.Flags().BoolVar(&drop, "drop", false, "with --rate: drop (cancel) the excess instead of holding it")
	cmd.Flags().StringVar(&keyRateFlag, "key-rate", "", "at most N starts of each key per DURATION across every server, as N/DURATION (10/1s); none removes it")
	cmd.Flags().IntVar(&keyBurst, "key-burst", 0, "with --key-rate: how many of one key may start at once (default 1)")
	cmd.Flags().BoolVar(&keyDrop, "key-drop", false, "with --key-rate: drop (cancel) each key's excess instead of holding it")
	return cmd
}

// rateText is a queue's throttle for the queue list: N/PERIOD, with its
// burst and drop ("-" without one).
func rateText(v statsview.Queue) string {
	if v.Rate == "" {
		return "-"
	}
	s := v.Rate
	if v.Burst > 1 {
		s += fmt.Sprintf(" burst %d", v.Burst)
	}
	if v.Drop {
		s += " drop"
	}
	return s
}

// fieldOf and reason are a *hopper.FieldError's field and reason (the
// error's text otherwise).
func fieldOf(err error) string {
	if fe := (*hopper.FieldError)(nil); errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

func reason(err error) string {
	if fe := (*hopper.FieldError)(nil); errors.As(err, &fe) {
		return fe.Reason
	}
	return err.Error()
}

// queuePauseCmd is pause or resume.
func (a *app) queuePauseCmd(verb, short string) *cobra.Command {
	var key string
	cmd := &cobra.Command{
		Use:   verb + " NAME [--key KEY]",
		Short: short,
		Long: short + `.

` + map[string]string{
			"pause": `The pause lives in the database: every server working it stops starting
the queue's jobs at its next claim, and it survives restarts. Jobs already
running finish. A queue need not have jobs to be paused.

With --key KEY, only the jobs of that key (enqueue --key) in the queue are
paused; its other keys go on.

Exit code: 0 if the queue (or the key) is paused (or already was).`,
			"resume": `The servers working the database are woken and start the queue's jobs at
once.

Exit code: 0 if the queue is active (or already was).`,
		}[verb],
		Args: exactArgs(1, "a queue NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, name := cmd.Context(), args[0]
			if cmd.Flags().Changed("key") {
				return a.pauseKey(ctx, verb == "pause", name, key)
			}
			return a.withSession(ctx, openOpts{access: create}, func(s *session) error {
				qs, err := s.Queues(ctx)
				if err != nil {
					return err
				}
				was := false
				for _, q := range qs {
					if q.Name == name {
						was = q.Paused
					}
				}
				pause := verb == "pause"
				if pause {
					err = s.PauseQueue(ctx, name)
				} else {
					err = s.ResumeQueue(ctx, name)
				}
				if fe := (*hopper.FieldError)(nil); errors.As(err, &fe) {
					return usagef("bad queue NAME %q: %s", name, fe.Reason)
				}
				if err != nil {
					return err
				}
				status := map[bool]string{true: "paused", false: "active"}[pause]
				changed := was != pause
				if a.json {
					return printJSON(a.Out, map[string]any{"queue": name, "status": status, "changed": changed})
				}
				switch {
				case !changed:
					fmt.Fprintf(a.Out, "queue %s already %s\n", name, status)
				case pause:
					fmt.Fprintf(a.Out, "queue %s paused\n", name)
				default:
					fmt.Fprintf(a.Out, "queue %s resumed\n", name)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "pause or resume only the jobs of this key in the queue")
	return cmd
}

// pauseKey pauses (or resumes) one key of a queue.
func (a *app) pauseKey(ctx context.Context, pause bool, name, key string) error {
	return a.withSession(ctx, openOpts{access: create}, func(s *session) error {
		var err error
		if pause {
			err = s.PauseKey(ctx, name, key)
		} else {
			err = s.ResumeKey(ctx, name, key)
		}
		if fe := (*hopper.FieldError)(nil); errors.As(err, &fe) {
			if fe.Field == "key" {
				return usagef("bad --key %q: %s", key, fe.Reason)
			}
			return usagef("bad queue NAME %q: %s", name, fe.Reason)
		}
		if err != nil {
			return err
		}
		status := map[bool]string{true: "paused", false: "active"}[pause]
		if a.json {
			return printJSON(a.Out, map[string]any{"queue": name, "key": key, "status": status})
		}
		fmt.Fprintf(a.Out, "queue %s key %s %s\n", name, key, map[bool]string{true: "paused", false: "resumed"}[pause])
		return nil
	})
}
