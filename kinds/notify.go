package kinds

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/smtp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// The headers of a webhook channel's request. SignatureHeader is
// "sha256=" and the hex HMAC-SHA256, keyed by the channel's secret, of
// the TimestampHeader's value, a ".", and the body: a receiver recomputes
// it over the bytes it read, compares in constant time, and refuses a
// timestamp too old (a replay). Without a secret there is no signature.
const (
	SignatureHeader = "X-Hopper-Signature"
	TimestampHeader = "X-Hopper-Timestamp"
	EventHeader     = "X-Hopper-Event"
)

// NotifyTimeout bounds one delivery (a request, a mail, a command); a
// delivery that fails is retried as any job's attempt.
const NotifyTimeout = 10 * time.Second

// ChannelSource gives a notification channel by name, secrets included:
// a *hopper.Client.
type ChannelSource interface {
	Channel(ctx context.Context, name string) (*hopper.Channel, error)
}

// Sign returns the value of SignatureHeader for body sent at ts (unix
// seconds) with secret.
func Sign(secret string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte("."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// notifier delivers notification jobs under o's policies.
type notifier struct {
	src  ChannelSource
	http *HTTPRunner
	exec *execRunner // nil: command channels are refused
	now  func() time.Time
}

// RegisterNotify registers the handler of notification jobs
// (hopper.NotifyKind) on w: it reads the job's channel from src, then
// sends it the notification — a webhook's signed JSON POST, a Slack
// message, a mail through SMTP, or a command run with the notification in
// its environment. Webhook, Slack and SMTP connections obey o.HTTP, the
// outbound policy of the http kind (an address it refuses fails the job
// permanently); a command channel runs under o.Exec, and only if o offers
// KindExec. Deliveries that fail are retried with backoff (up to 10
// attempts by default, then the dead-letter queue); a channel removed
// meanwhile fails permanently. It returns o's Validate error, registering
// nothing, if o is not valid.
func RegisterNotify(w *hopper.Workers, o Options, src ChannelSource) error {
	c, err := o.compile()
	if err != nil {
		return err
	}
	n := &notifier{src: src, http: c.http, exec: c.exec, now: time.Now}
	if n.http == nil {
		if n.http, err = NewHTTPRunner(o.HTTP); err != nil {
			return optionError("Options.HTTP.Allow", err.Error())
		}
	}
	hopper.Register(w, hopper.NotifyKind, n.deliver, &hopper.EnqueueOptions{MaxAttempts: 10, Timeout: 2 * NotifyTimeout})
	return nil
}

// deliver sends one notification.
func (n *notifier) deliver(ctx context.Context, a hopper.NotifyArgs) (any, error) {
	ch, err := n.src.Channel(ctx, a.Channel)
	if errors.Is(err, hopper.ErrNotFound) {
		return nil, hopper.Permanent(fmt.Errorf("notify: channel %q no longer exists", a.Channel))
	}
	if err != nil {
		return nil, fmt.Errorf("notify: channel %q: %w", a.Channel, err)
	}
	body, err := json.Marshal(a.Notification)
	if err != nil {
		return nil, hopper.Permanent(err)
	}
	ctx, cancel := context.WithTimeout(ctx, NotifyTimeout)
	defer cancel()
	switch ch.Type {
	case job.ChannelWebhook:
		h := map[string]string{"Content-Type": "application/json", EventHeader: a.Notification.Event}
		if ch.Secret != "" {
			ts := n.now().Unix()
			h[TimestampHeader] = strconv.FormatInt(ts, 10)
			h[SignatureHeader] = Sign(ch.Secret, ts, body)
		}
		return n.http.deliverHTTP(ctx, ch, HTTPArgs{Method: "POST", URL: ch.URL, Headers: h, Body: string(body), Timeout: Duration(NotifyTimeout)})
	case job.ChannelSlack:
		msg, _ := json.Marshal(map[string]string{"text": a.Notification.Summary()})
		return n.http.deliverHTTP(ctx, ch, HTTPArgs{Method: "POST", URL: ch.URL, Headers: map[string]string{"Content-Type": "application/json"},
			Body: string(msg), Timeout: Duration(NotifyTimeout)})
	case job.ChannelEmail:
		return nil, n.mail(ctx, ch, &a.Notification, body)
	case job.ChannelCommand:
		if n.exec == nil {
			return nil, hopper.Permanent(fmt.Errorf("notify: channel %q is a command, and this server does not offer the exec kind", ch.Name))
		}
		env := []string{"HOPPER_NOTIFICATION=" + string(body), "HOPPER_EVENT=" + a.Notification.Event,
			"HOPPER_STATUS=" + a.Notification.Status, "HOPPER_SUBJECT=" + a.Notification.Subject}
		return result(n.exec.run(ctx, ExecArgs{Command: ch.Command[0], Args: slices.Clone(ch.Command[1:]), Env: env,
			Timeout: Duration(NotifyTimeout)}, supervisorAvailable.Load()))
	}
	return nil, hopper.Permanent(fmt.Errorf("notify: channel %q: unknown type %q", ch.Name, ch.Type))
}

// mail sends the notification through the channel's SMTP server: STARTTLS
// when the server offers it, PLAIN authentication when a user is set
// (net/smtp refuses it over an unencrypted connection to another host).
func (n *notifier) mail(ctx context.Context, ch *hopper.Channel, no *hopper.Notification, body []byte) error {
	conn, err := n.http.dial(ctx, "tcp", ch.SMTPAddr)
	if err != nil {
		var re *RefusedAddrError
		if errors.As(err, &re) {
			return hopper.Permanent(fmt.Errorf("notify: smtp %s: %w", ch.SMTPAddr, err))
		}
		return fmt.Errorf("notify: smtp %s: %w", ch.SMTPAddr, err)
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	host, _, _ := net.SplitHostPort(ch.SMTPAddr)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return fmt.Errorf("notify: smtp %s: %w", ch.SMTPAddr, err)
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok {
		if err := c.StartTLS(&tls.Config{ServerName: host}); err != nil {
			return fmt.Errorf("notify: smtp %s: starttls: %w", ch.SMTPAddr, err)
		}
	}
	if ch.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", ch.Username, ch.Password, host)); err != nil {
			return hopper.Permanent(fmt.Errorf("notify: smtp %s: auth: %w", ch.SMTPAddr, err))
		}
	}
	if err := c.Mail(ch.From); err != nil {
		return fmt.Errorf("notify: smtp %s: %w", ch.SMTPAddr, err)
	}
	for _, to := range ch.To {
		if err := c.Rcpt(to); err != nil {
			return fmt.Errorf("notify: smtp %s: rcpt %s: %w", ch.SMTPAddr, to, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("notify: smtp %s: %w", ch.SMTPAddr, err)
	}
	subject := mime.QEncoding.Encode("utf-8", strings.NewReplacer("\r", " ", "\n", " ").Replace(no.Summary()))
	fmt.Fprintf(w, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n",
		ch.From, strings.Join(ch.To, ", "), subject, n.now().UTC().Format(time.RFC1123Z))
	fmt.Fprintf(w, "%s\r\n\r\n%s\r\n", strings.ReplaceAll(no.Detail, "\n", "\r\n"), body)
	if err := w.Close(); err != nil {
		return fmt.Errorf("notify: smtp %s: %w", ch.SMTPAddr, err)
	}
	return c.Quit()
}

// RunsCommand reports whether a job of kind may run a command on the
// server: an exec job, and a notification job (hopper.NotifyKind), which
// runs its channel's program when the channel is a command. Over HTTP,
// making such a job run — enqueueing it, retrying it dead, running or
// backfilling its schedule — needs the exec scope (docs/security.md).
func RunsCommand(kind string) bool { return kind == KindExec || kind == hopper.NotifyKind }

// CommandKinds returns the kinds RunsCommand reports, for
// hopper.BulkOptions.ExceptKinds.
func CommandKinds() []string { return []string{KindExec, hopper.NotifyKind} }

// CommandJob returns the first of the jobs ids that may run a command
// (RunsCommand), with its kind, or 0 if none does; jobs not found are
// skipped. A job's kind never changes, so the answer holds when a retry
// of ids runs: the API and the dashboard refuse a retry that would run a
// command to a token without the exec scope.
func CommandJob(ctx context.Context, c *hopper.Client, ids []hopper.ID) (hopper.ID, string, error) {
	for _, id := range ids {
		j, err := c.Get(ctx, id)
		if errors.Is(err, hopper.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, "", err
		}
		if RunsCommand(j.Kind) {
			return id, j.Kind, nil
		}
	}
	return 0, "", nil
}
