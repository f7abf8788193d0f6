package cli

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/spf13/cobra"
)

func (a *app) alertsCmd() *cobra.Command {
	return group("alerts", "List the incidents the schedules' monitors found", a.alertsListCmd())
}

func (a *app) alertsListCmd() *cobra.Command {
	var f hopper.IncidentFilter
	c := &cobra.Command{
		Use:   "list",
		Short: "List incidents, newest first: missed starts, runs over their maximum, K failures",
		Long: `List the incidents the schedules' monitors found (schedule add
--start-grace, --max-duration, --alert-after-failures), newest first: its
ID, subject, problem, when it opened ("down") and was resolved ("up"; "-"
while open), the job concerned and what was found. Each incident was
notified once when it opened and once when it was resolved, to the
channels of "hopper channel".`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				ins, err := s.Incidents(ctx, f)
				if err != nil {
					return flagError(cmd.Flags(), err)
				}
				if a.json {
					return printJSON(a.Out, ins)
				}
				if len(ins) == 0 {
					fmt.Fprintln(a.Err, "no incidents")
					return nil
				}
				t := newTable(a.Out, "ID", "SUBJECT", "PROBLEM", "OPENED", "RESOLVED", "JOB", "DETAIL")
				for _, in := range ins {
					resolved, jobID := "-", "-"
					if !in.Open() {
						resolved = clock(in.ResolvedAt)
					}
					if in.Job != 0 {
						jobID = strconv.FormatInt(int64(in.Job), 10)
					}
					t.row(strconv.FormatInt(in.ID, 10), in.Subject, string(in.Problem), clock(in.OpenedAt), resolved, jobID, in.Detail)
				}
				return t.flush()
			})
		},
	}
	c.Flags().StringVar(&f.Schedule, "schedule", "", "only this schedule's incidents")
	c.Flags().StringVar(&f.Check, "check", "", "only this external check's incidents")
	c.Flags().BoolVar(&f.Open, "open", false, "only incidents not resolved yet")
	c.Flags().IntVar(&f.Limit, "limit", 100, "at most this many")
	return c
}

func (a *app) channelCmd() *cobra.Command {
	return group("channel", "Configure where notifications go: webhooks, Slack, mail, commands",
		a.channelAddCmd(), a.channelListCmd(), a.channelRemoveCmd(), a.channelTestCmd())
}

// channelFlags are channel add's flags.
type channelFlags struct {
	typ, url, secretEnv, smtp, from, user, passwordEnv string
	to, events                                         []string
	all                                                bool
}

func (a *app) channelAddCmd() *cobra.Command {
	var f channelFlags
	c := &cobra.Command{
		Use:   "add NAME --type webhook|slack|email|command [flags] [-- COMMAND [ARGS...]]",
		Short: "Add (or replace) a notification channel",
		Long: `Add a notification channel, or replace the one of the same name. Each
notification — an incident opened or resolved, a dead job, a catch-up over
its cap — is a job of kind hopper.notify per channel, with retries and the
dead-letter queue; "hopper serve" delivers them under its outbound policy
(--http-allow), as it runs http jobs.

A channel takes the notifications of the schedules naming it (schedule add
--notify NAME), or with --all those of every schedule and every dead job;
--event keeps only some events (missed_start, over_duration, failing,
job_dead, catch_up_over_cap).

Secrets are read from environment variables, never from the command line
(which other users of the machine can see): --secret-env for a webhook's
HMAC key, --password-env for the SMTP password. The API and this command
never print them back.`,
		Example: `  HOOK_KEY=... hopper channel add ops --type webhook --url https://ops.example.com/hopper --secret-env HOOK_KEY --all
  hopper channel add team --type slack --url https://hooks.slack.com/services/T000/B000/XXXX --event failing
  hopper channel add mail --type email --smtp smtp.example.com:587 --from hopper@example.com --to ops@example.com --all
  hopper channel add pager --type command --all -- /usr/local/bin/page-oncall`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ch := hopper.Channel{Name: args[0], Type: job.ChannelType(f.typ), URL: f.url, SMTPAddr: f.smtp, From: f.from,
				To: f.to, Username: f.user, All: f.all, Events: f.events}
			if len(args) > 1 {
				if ch.Type != job.ChannelCommand {
					return usagef("only a command channel takes a command after its NAME, got %q", strings.Join(args[1:], " "))
				}
				ch.Command = args[1:]
			}
			for _, s := range []struct {
				env string
				to  *string
				opt string
			}{{f.secretEnv, &ch.Secret, "--secret-env"}, {f.passwordEnv, &ch.Password, "--password-env"}} {
				if s.env == "" {
					continue
				}
				v, ok := os.LookupEnv(s.env)
				if !ok || v == "" {
					return usagef("%s %s: the variable is not set", s.opt, s.env)
				}
				*s.to = v
			}
			return a.withSession(ctx, openOpts{access: create}, func(s *session) error {
				if err := s.SetChannel(ctx, ch); err != nil {
					return channelError(err)
				}
				got, err := s.Channel(ctx, ch.Name)
				if err != nil {
					return err
				}
				if a.json {
					return printJSON(a.Out, got.Redacted())
				}
				fmt.Fprintf(a.Out, "channel %s saved: %s\n", ch.Name, describeChannel(got.Redacted()))
				return nil
			})
		},
	}
	fs := c.Flags()
	fs.StringVar(&f.typ, "type", "", "webhook, slack, email or command")
	fs.StringVar(&f.url, "url", "", "webhook, slack: the URL to POST to")
	fs.StringVar(&f.secretEnv, "secret-env", "", "webhook: the variable holding the HMAC-SHA256 key the body is signed with (header X-Hopper-Signature)")
	fs.StringVar(&f.smtp, "smtp", "", "email: the SMTP server, host:port")
	fs.StringVar(&f.from, "from", "", "email: the sender")
	fs.StringArrayVar(&f.to, "to", nil, "email: a recipient (repeatable)")
	fs.StringVar(&f.user, "username", "", "email: the SMTP user (PLAIN authentication, over TLS unless the server is local)")
	fs.StringVar(&f.passwordEnv, "password-env", "", "email: the variable holding the SMTP password")
	fs.BoolVar(&f.all, "all", false, "take the notifications of every schedule and every dead job")
	fs.StringArrayVar(&f.events, "event", nil, "take only this event (repeatable): "+strings.Join(job.NotifyEvents, ", "))
	return c
}

// channelError names the flag of an invalid channel's field.
func channelError(err error) error {
	var fe *hopper.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	flag := map[string]string{"name": "NAME", "type": "--type", "url": "--url", "secret": "--secret-env", "smtp_addr": "--smtp",
		"from": "--from", "to": "--to", "events": "--event", "command": "COMMAND"}[fe.Field]
	if flag == "" {
		return err
	}
	return usagef("bad %s: %s", flag, fe.Reason)
}

// describeChannel says where a channel sends, without its secrets.
func describeChannel(ch *hopper.Channel) string {
	var s string
	switch ch.Type {
	case job.ChannelWebhook, job.ChannelSlack:
		s = string(ch.Type) + " " + ch.URL
		if ch.Secret != "" {
			s += " (signed)"
		}
	case job.ChannelEmail:
		s = "email to " + strings.Join(ch.To, ", ") + " via " + ch.SMTPAddr
	case job.ChannelCommand:
		s = "command " + strings.Join(ch.Command, " ")
	}
	if ch.All {
		s += "; every schedule and dead job"
	} else {
		s += "; the schedules naming it"
	}
	if len(ch.Events) > 0 {
		s += "; events " + strings.Join(ch.Events, ", ")
	}
	return s
}

func (a *app) channelListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the notification channels (without their secrets)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				chs, err := s.Channels(ctx)
				if err != nil {
					return err
				}
				out := make([]*hopper.Channel, len(chs))
				for i, ch := range chs {
					out[i] = ch.Redacted()
				}
				if a.json {
					return printJSON(a.Out, out)
				}
				if len(out) == 0 {
					fmt.Fprintln(a.Err, "no channels (add one with hopper channel add)")
					return nil
				}
				t := newTable(a.Out, "NAME", "TYPE", "SENDS")
				for _, ch := range out {
					t.row(ch.Name, string(ch.Type), describeChannel(ch))
				}
				return t.flush()
			})
		},
	}
}

func (a *app) channelRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a notification channel",
		Args:  exactArgs(1, "the channel's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readWrite}, func(s *session) error {
				if err := s.RemoveChannel(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(a.Out, "channel %s removed\n", args[0])
				return nil
			})
		},
	}
}

func (a *app) channelTestCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "test NAME",
		Short: "Enqueue a test notification to a channel (hopper serve delivers it)",
		Args:  exactArgs(1, "the channel's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readWrite}, func(s *session) error {
				j, err := s.TestChannel(ctx, args[0])
				if err != nil {
					return err
				}
				if a.json {
					return printJSON(a.Out, j)
				}
				fmt.Fprintf(a.Out, "test notification enqueued as job %d (see hopper jobs get %d)\n", j.ID, j.ID)
				return nil
			})
		},
	}
}
