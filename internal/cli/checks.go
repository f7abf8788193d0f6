package cli

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/spf13/cobra"
)

// PublicURLEnv is the variable naming the URL the server is reached at,
// for the ping URLs check add and check get print.
const PublicURLEnv = "HOPPER_PUBLIC_URL"

func (a *app) checkCmd() *cobra.Command {
	return group("check", "External checks: a dead man's switch for cron lines outside Hopper (Healthchecks-style pings)",
		a.checkAddCmd(), a.checkListCmd(), a.checkGetCmd(), a.checkRemoveCmd(), a.checkPauseCmd(true), a.checkPauseCmd(false))
}

// pingURL returns the ping URL of a check at base ("" prints the path).
func pingURL(base, pingID string) string {
	return strings.TrimSuffix(base, "/") + "/ping/" + pingID
}

// checkFlags are check add's flags.
type checkFlags struct {
	period, grace time.Duration
	cron, tz      string
	pingID, base  string
	notify        []string
}

func (a *app) checkAddCmd() *cobra.Command {
	var f checkFlags
	c := &cobra.Command{
		Use:   "add NAME --period D | --cron SPEC [--tz ZONE] [--grace D] [--notify CH]...",
		Short: "Add an external check and print its ping URL",
		Long: `Add an external check: something that runs outside Hopper (a crontab
line, a systemd timer) requests its ping URL when it succeeds, as with
Healthchecks.io:

  0 3 * * * /usr/local/bin/backup.sh && curl -fsS -m 10 --retry 3 https://hopper.example.com/ping/ID

The check expects a success ping every --period, or at each tick of --cron
(in --tz), and goes down when none came --grace after that, when a run
that pinged /start did not finish within --grace, or on a failure ping
(/fail or a non-zero /EXIT_CODE). "hopper serve --http" answers the pings
(no token: the ping ID is the secret) and its monitor opens an incident
(check_down) and notifies the channels, once down and once up again.

The ping URL is printed with $` + PublicURLEnv + ` (or --url) in front.`,
		Example: `  hopper check add backup --cron '0 3 * * *' --tz Europe/Berlin --grace 30m --notify ops
  hopper check add heartbeat --period 5m --grace 1m`,
		Args: exactArgs(1, "the check's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			o := hopper.CheckOptions{Period: f.period, Cron: f.cron, TimeZone: f.tz, Grace: f.grace, Channels: f.notify, PingID: f.pingID}
			return a.withSession(ctx, openOpts{access: create}, func(s *session) error {
				ch, err := s.AddCheck(ctx, args[0], o)
				if err != nil {
					return checkError(err)
				}
				if a.json {
					return printJSON(a.Out, ch.View(s.Now(), true))
				}
				fmt.Fprintf(a.Out, "check %s added; ping it at %s\n", ch.Name, pingURL(a.publicURL(f.base), ch.PingID))
				return nil
			})
		},
	}
	fs := c.Flags()
	fs.DurationVar(&f.period, "period", 0, "the expected time between success pings")
	fs.StringVar(&f.cron, "cron", "", "instead of --period: a cron expression whose ticks are when success pings are expected")
	fs.StringVar(&f.tz, "tz", "", "the cron expression's IANA time zone (default UTC)")
	fs.DurationVar(&f.grace, "grace", 0, "how late a ping may be, and how long a started run may last (default 1h)")
	fs.StringArrayVar(&f.notify, "notify", nil, "a notification channel of its incidents (repeatable), besides those taking every subject")
	fs.StringVar(&f.pingID, "ping-id", "", "the ping URL's secret, to keep an existing one such as a Healthchecks UUID (default: 128 random bits)")
	fs.StringVar(&f.base, "url", "", "the server's URL, printed before /ping/ID (default $"+PublicURLEnv+")")
	return c
}

// publicURL is flag, or $HOPPER_PUBLIC_URL.
func (a *app) publicURL(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(PublicURLEnv)
}

// checkError names the flag of an invalid check's field.
func checkError(err error) error {
	var fe *hopper.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	flag := map[string]string{"name": "NAME", "period": "--period", "cron": "--cron", "time_zone": "--tz", "grace": "--grace",
		"channels": "--notify", "ping_id": "--ping-id"}[fe.Field]
	if flag == "" {
		return err
	}
	return usagef("bad %s: %s", flag, fe.Reason)
}

// checkEvery says when a check expects its pings.
func checkEvery(c *hopper.Check) string {
	if c.Cron != "" {
		if c.TimeZone != "" {
			return c.Cron + " (" + c.TimeZone + ")"
		}
		return c.Cron
	}
	return "every " + c.Period.String()
}

func (a *app) checkListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the external checks: status, schedule, grace, last ping",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				cs, err := s.Checks(ctx)
				if err != nil {
					return err
				}
				now := s.Now()
				if a.json {
					out := make([]job.CheckView, len(cs))
					for i, c := range cs {
						out[i] = c.View(now, true)
					}
					return printJSON(a.Out, out)
				}
				if len(cs) == 0 {
					fmt.Fprintln(a.Err, "no checks (add one with hopper check add)")
					return nil
				}
				t := newTable(a.Out, "NAME", "STATUS", "EXPECTS", "GRACE", "LAST PING", "DOWN AT")
				for _, c := range cs {
					t.row(c.Name, c.Status(now), checkEvery(c), c.Grace.String(), clock(c.LastPingAt), clock(c.DownAt()))
				}
				return t.flush()
			})
		},
	}
}

func (a *app) checkGetCmd() *cobra.Command {
	var (
		n    int
		base string
	)
	c := &cobra.Command{
		Use:   "get NAME",
		Short: "Show an external check: its ping URL, status and recent pings",
		Args:  exactArgs(1, "the check's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				c, err := s.GetCheck(ctx, args[0])
				if err != nil {
					return err
				}
				pings, err := s.Pings(ctx, c.Name, n)
				if err != nil {
					return err
				}
				now := s.Now()
				if a.json {
					return printJSON(a.Out, struct {
						job.CheckView
						RecentPings []*hopper.Ping `json:"recent_pings"`
					}{c.View(now, true), pings})
				}
				fmt.Fprintf(a.Out, "name:      %s\nstatus:    %s\nping URL:  %s\nexpects:   %s, grace %s\n", c.Name, c.Status(now),
					pingURL(a.publicURL(base), c.PingID), checkEvery(c), c.Grace)
				fmt.Fprintf(a.Out, "last ping: %s\ndown at:   %s\npings:     %d\n", clock(c.LastPingAt), clock(c.DownAt()), c.Pings)
				if len(c.Channels) > 0 {
					fmt.Fprintf(a.Out, "notify:    %s\n", strings.Join(c.Channels, ", "))
				}
				if len(pings) == 0 {
					return nil
				}
				fmt.Fprintln(a.Out)
				t := newTable(a.Out, "#", "AT", "KIND", "EXIT", "RID", "DURATION", "FROM", "BODY")
				for _, p := range pings {
					exit, dur := "-", "-"
					if p.ExitCode != nil {
						exit = strconv.Itoa(*p.ExitCode)
					}
					if p.Duration > 0 {
						dur = p.Duration.Round(time.Millisecond).String()
					}
					body := strings.Join(strings.Fields(p.Body), " ")
					if len(body) > 60 {
						body = body[:60] + "…"
					}
					t.row(strconv.FormatInt(p.Seq, 10), clock(p.At), string(p.Kind), exit, cmp.Or(p.RID, "-"), dur, cmp.Or(p.RemoteAddr, "-"), body)
				}
				return t.flush()
			})
		},
	}
	c.Flags().IntVar(&n, "pings", 10, "how many recent pings to show")
	c.Flags().StringVar(&base, "url", "", "the server's URL, printed before /ping/ID (default $"+PublicURLEnv+")")
	return c
}

func (a *app) checkRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"remove"},
		Short:   "Remove an external check and its ping log",
		Args:    exactArgs(1, "the check's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readWrite}, func(s *session) error {
				if err := s.RemoveCheck(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(a.Out, "check %s removed\n", args[0])
				return nil
			})
		},
	}
}

func (a *app) checkPauseCmd(pause bool) *cobra.Command {
	use, short := "resume NAME", "Resume a paused external check: new again, it goes down only after its next ping"
	if pause {
		use, short = "pause NAME", "Pause an external check: it does not go down until resumed or pinged"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(1, "the check's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readWrite}, func(s *session) error {
				op := s.ResumeCheck
				if pause {
					op = s.PauseCheck
				}
				c, err := op(ctx, args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(a.Out, "check %s %s\n", c.Name, c.Status(s.Now()))
				return nil
			})
		},
	}
}
