package kinds

import (
	"bufio"
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store/memstore"
)

// clientRef is a ChannelSource whose client is set after it is made.
type clientRef struct{ c *hopper.Client }

func (r *clientRef) Channel(ctx context.Context, name string) (*hopper.Channel, error) {
	return r.c.Channel(ctx, name)
}

// notifyClient starts a client that notifies dead jobs, with the
// notification kind registered under o and a kind "doomed" that fails
// permanently.
func notifyClient(t *testing.T, o Options) *hopper.Client {
	t.Helper()
	ws := hopper.NewWorkers()
	ref := &clientRef{}
	if err := RegisterNotify(ws, o, ref); err != nil {
		t.Fatal(err)
	}
	hopper.RegisterRaw(ws, "doomed", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return nil, hopper.Permanent(errors.New("no such file"))
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Store: memstore.New(), Workers: ws, NotifyDeadJobs: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ref.c = c
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}

// doom enqueues n jobs that die at once.
func doom(t *testing.T, c *hopper.Client, n int) {
	t.Helper()
	for range n {
		if _, err := c.Enqueue(t.Context(), "doomed", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// p99 returns the 99th percentile of ds.
func p99(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)*99+99)/100-1]
}

// TestNotifyWebhookSignedLatency: 200 dead jobs are each notified to a
// webhook on loopback, signed with HMAC-SHA256 over the timestamp and the
// body as documented; the p99 from a job's death to its notification's
// receipt is within 10 s (real clock).
func TestNotifyWebhookSignedLatency(t *testing.T) {
	t.Parallel()
	const n, secret = 200, "s3cret"
	type got struct {
		n  hopper.Notification
		at time.Time
	}
	recv := make(chan got, n)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, err := strconv.ParseInt(r.Header.Get(TimestampHeader), 10, 64)
		if err != nil || !hmac.Equal([]byte(r.Header.Get(SignatureHeader)), []byte(Sign(secret, ts, body))) {
			t.Errorf("bad signature %q over timestamp %q", r.Header.Get(SignatureHeader), r.Header.Get(TimestampHeader))
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var no hopper.Notification
		if err := json.Unmarshal(body, &no); err != nil || r.Header.Get(EventHeader) != no.Event || r.Method != "POST" {
			t.Errorf("request %s %s event header %q: %v", r.Method, body, r.Header.Get(EventHeader), err)
		}
		recv <- got{no, time.Now()}
	}))
	defer srv.Close()
	c := notifyClient(t, Options{Kinds: []string{KindHTTP}, HTTP: allowLoopback})
	ctx := t.Context()
	if err := c.SetChannel(ctx, hopper.Channel{Name: "hook", Type: job.ChannelWebhook, URL: srv.URL + "/hook", Secret: secret, All: true}); err != nil {
		t.Fatal(err)
	}
	doom(t, c, n)
	var lat []time.Duration
	timeout := time.After(time.Minute)
	for range n {
		select {
		case g := <-recv:
			if g.n.Event != job.NotifyJobDead || g.n.Status != job.StatusEvent || g.n.Job == 0 {
				t.Fatalf("notification %+v, want a job_dead event", g.n)
			}
			j, err := c.Get(ctx, g.n.Job)
			if err != nil {
				t.Fatal(err)
			}
			lat = append(lat, g.at.Sub(j.FinishedAt))
		case <-timeout:
			t.Fatalf("%d of %d notifications in a minute", len(lat), n)
		}
	}
	// The notification jobs' args name the channel; its secret is not in them.
	notes, err := c.List(ctx, hopper.ListOptions{Kind: hopper.NotifyKind, Limit: 1000})
	if err != nil || len(notes) != n {
		t.Fatalf("notification jobs: %d, %v; want %d", len(notes), err, n)
	}
	for _, j := range notes {
		if strings.Contains(string(j.Args), secret) || !strings.Contains(string(j.Args), `"channel":"hook"`) {
			t.Fatalf("notification job %d args %s: want the channel's name and no secret", j.ID, j.Args)
		}
	}
	t.Logf("webhook delivery after a job's death, %d notifications: min %v, p50 %v, p99 %v, max %v", n, slices.Min(lat), median(lat), p99(lat), slices.Max(lat))
	if p := p99(lat); p > 10*time.Second {
		t.Errorf("p99 delivery %v, want at most 10s", p)
	}
}

// smtpStub is an SMTP server on loopback that accepts one conversation at
// a time and hands each message's envelope and data to msgs.
type smtpMsg struct {
	from string
	to   []string
	data string
	at   time.Time
}

func smtpStub(t *testing.T, msgs chan<- smtpMsg) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				r, w := bufio.NewReader(conn), conn
				say := func(s string) { io.WriteString(w, s+"\r\n") }
				say("220 stub ESMTP")
				var m smtpMsg
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					cmd := strings.TrimRight(line, "\r\n")
					switch up := strings.ToUpper(cmd); {
					case strings.HasPrefix(up, "EHLO"), strings.HasPrefix(up, "HELO"):
						say("250 stub")
					case strings.HasPrefix(up, "MAIL FROM:"):
						m.from = strings.Trim(cmd[len("MAIL FROM:"):], "<> ")
						say("250 ok")
					case strings.HasPrefix(up, "RCPT TO:"):
						m.to = append(m.to, strings.Trim(cmd[len("RCPT TO:"):], "<> "))
						say("250 ok")
					case up == "DATA":
						say("354 go on")
						var b strings.Builder
						for {
							l, err := r.ReadString('\n')
							if err != nil {
								return
							}
							if l == ".\r\n" {
								break
							}
							b.WriteString(l)
						}
						m.data, m.at = b.String(), time.Now()
						msgs <- m
						m = smtpMsg{}
						say("250 queued")
					case up == "QUIT":
						say("221 bye")
						return
					default:
						say("250 ok")
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// TestNotifyEmail: a dead job is mailed through an SMTP server on
// loopback (net/smtp), from and to the channel's addresses, within 10 s.
func TestNotifyEmail(t *testing.T) {
	t.Parallel()
	msgs := make(chan smtpMsg, 10)
	addr := smtpStub(t, msgs)
	c := notifyClient(t, Options{Kinds: []string{KindHTTP}, HTTP: allowLoopback})
	ctx := t.Context()
	if err := c.SetChannel(ctx, hopper.Channel{Name: "mail", Type: job.ChannelEmail, SMTPAddr: addr, From: "hopper@example.com",
		To: []string{"ops@example.com", "oncall@example.com"}, All: true}); err != nil {
		t.Fatal(err)
	}
	doom(t, c, 1)
	select {
	case m := <-msgs:
		if m.from != "hopper@example.com" || !slices.Equal(m.to, []string{"ops@example.com", "oncall@example.com"}) {
			t.Errorf("envelope: from %q to %q", m.from, m.to)
		}
		if !strings.Contains(m.data, "Subject: ") || !strings.Contains(m.data, "no such file") || !strings.Contains(m.data, `"event":"job_dead"`) {
			t.Errorf("message:\n%s", m.data)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no mail within 10s")
	}
}

// TestNotifySlack: a Slack channel gets {"text": the summary}.
func TestNotifySlack(t *testing.T) {
	t.Parallel()
	recv := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]string
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			t.Error(err)
		}
		recv <- m["text"]
	}))
	defer srv.Close()
	c := notifyClient(t, Options{Kinds: []string{KindHTTP}, HTTP: allowLoopback})
	if err := c.SetChannel(t.Context(), hopper.Channel{Name: "slack", Type: job.ChannelSlack, URL: srv.URL, All: true}); err != nil {
		t.Fatal(err)
	}
	doom(t, c, 1)
	select {
	case text := <-recv:
		if !strings.HasPrefix(text, "[hopper] EVENT job ") || !strings.Contains(text, "job_dead") {
			t.Errorf("slack text %q", text)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no slack message within 10s")
	}
}

// TestNotifyOutboundPolicy: under the default outbound policy, which
// refuses loopback, a webhook notification to a loopback address is
// refused without connecting and goes to the dead-letter queue at once
// (permanent), and so is an SMTP server on loopback.
func TestNotifyOutboundPolicy(t *testing.T) {
	t.Parallel()
	hits := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits <- struct{}{} }))
	defer srv.Close()
	msgs := make(chan smtpMsg, 10)
	addr := smtpStub(t, msgs)
	c := notifyClient(t, Options{Kinds: []string{KindHTTP}})
	ctx := t.Context()
	for _, ch := range []hopper.Channel{
		{Name: "hook", Type: job.ChannelWebhook, URL: srv.URL, All: true},
		{Name: "mail", Type: job.ChannelEmail, SMTPAddr: addr, From: "a@example.com", To: []string{"b@example.com"}, All: true},
	} {
		if err := c.SetChannel(ctx, ch); err != nil {
			t.Fatal(err)
		}
	}
	sub := c.Subscribe(job.EventDead)
	defer sub.Unsubscribe()
	doom(t, c, 1)
	refused := map[string]bool{}
	for len(refused) < 2 {
		select {
		case ev := <-sub.C:
			if ev.Job.Kind != hopper.NotifyKind {
				continue
			}
			var a hopper.NotifyArgs
			json.Unmarshal(ev.Job.Args, &a)
			if ev.Job.Attempt != 1 || !strings.Contains(ev.Job.LastError, "loopback address, which http jobs may not reach") {
				t.Errorf("notification to %s: dead after %d attempts: %s; want refused at once", a.Channel, ev.Job.Attempt, ev.Job.LastError)
			}
			refused[a.Channel] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("refused notifications: %v, want hook and mail", refused)
		}
	}
	select {
	case <-hits:
		t.Error("the webhook on loopback was reached")
	case <-msgs:
		t.Error("the SMTP server on loopback was reached")
	default:
	}
}

// TestNotifyCommand: a command channel runs its program with the
// notification in HOPPER_NOTIFICATION, under the exec policy, and only
// where the exec kind is offered.
func TestNotifyCommand(t *testing.T) {
	t.Parallel()
	if !ExecSupported {
		t.Skip("exec is Unix's")
	}
	out := filepath.Join(t.TempDir(), "out")
	c := notifyClient(t, Options{})
	ctx := t.Context()
	if err := c.SetChannel(ctx, hopper.Channel{Name: "cmd", Type: job.ChannelCommand, All: true,
		Command: []string{"/bin/sh", "-c", `printf '%s %s' "$HOPPER_EVENT" "$HOPPER_NOTIFICATION" > ` + out}}); err != nil {
		t.Fatal(err)
	}
	sub := c.Subscribe(job.EventCompleted)
	defer sub.Unsubscribe()
	doom(t, c, 1)
	for done := false; !done; {
		select {
		case ev := <-sub.C:
			done = ev.Job.Kind == hopper.NotifyKind
		case <-time.After(10 * time.Second):
			t.Fatal("the command's notification did not complete within 10s")
		}
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.HasPrefix(string(b), `job_dead {"event":"job_dead"`) {
		t.Errorf("command output %q, %v", b, err)
	}
	// Outside the exec policy's allow-list, a command channel fails permanently.
	c3 := notifyClient(t, Options{Exec: ExecPolicy{Allow: []string{"/usr/bin/true"}}})
	if err := c3.SetChannel(ctx, hopper.Channel{Name: "cmd", Type: job.ChannelCommand, All: true, Command: []string{"/bin/sh", "-c", "touch " + out + ".3"}}); err != nil {
		t.Fatal(err)
	}
	sub3 := c3.Subscribe(job.EventDead)
	defer sub3.Unsubscribe()
	doom(t, c3, 1)
	for waiting := true; waiting; {
		select {
		case ev := <-sub3.C:
			if ev.Job.Kind != hopper.NotifyKind {
				continue
			}
			if ev.Job.Attempt != 1 || !strings.Contains(ev.Job.LastError, "is not in the exec allow-list") {
				t.Errorf("command outside the allow-list: dead after %d attempts: %s", ev.Job.Attempt, ev.Job.LastError)
			}
			waiting = false
		case <-time.After(10 * time.Second):
			t.Fatal("the command outside the allow-list did not die within 10s")
		}
	}
	if _, err := os.Stat(out + ".3"); err == nil {
		t.Error("the command outside the allow-list ran")
	}
	// Where exec is not offered, a command channel fails permanently.
	c2 := notifyClient(t, Options{Kinds: []string{KindHTTP}})
	if err := c2.SetChannel(ctx, hopper.Channel{Name: "cmd", Type: job.ChannelCommand, All: true, Command: []string{"/bin/true"}}); err != nil {
		t.Fatal(err)
	}
	sub2 := c2.Subscribe(job.EventDead)
	defer sub2.Unsubscribe()
	doom(t, c2, 1)
	for {
		select {
		case ev := <-sub2.C:
			if ev.Job.Kind != hopper.NotifyKind {
				continue
			}
			if ev.Job.Attempt != 1 || !strings.Contains(ev.Job.LastError, "does not offer the exec kind") {
				t.Errorf("command channel without exec: dead after %d attempts: %s", ev.Job.Attempt, ev.Job.LastError)
			}
			return
		case <-time.After(10 * time.Second):
			t.Fatal("the command channel's notification did not die within 10s")
		}
	}
}

// median returns the median of ds.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
