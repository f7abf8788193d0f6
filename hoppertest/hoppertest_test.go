package hoppertest_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/hoppertest"
	_ "github.com/hopperq/hopper/store/sqlitestore" // registers "sqlite:"
)

// fakeTB records what an assertion reports; Fatalf ends the goroutine, as
// testing's does.
type fakeTB struct {
	testing.TB
	msgs []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

// failure runs fn with a fakeTB and returns what it reported ("" if
// nothing).
func failure(fn func(tb testing.TB)) string {
	tb := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	return strings.Join(tb.msgs, "\n")
}

type email struct {
	To      string `json:"to"`
	Subject string `json:"subject,omitempty"`
}

// client returns a memory client with the kinds email and report, or one on
// a SQLite file with sqlite.
func client(t *testing.T, sqlite bool) *hopper.Client {
	t.Helper()
	ws := hopper.NewWorkers()
	hopper.Register(ws, "email", func(ctx context.Context, e email) (any, error) { return "sent to " + e.To, nil }, nil)
	hopper.Register(ws, "report", func(ctx context.Context, n int) (any, error) { return n, nil }, nil)
	cfg := hopper.Config{Workers: ws}
	var c *hopper.Client
	var err error
	if sqlite {
		c, err = hopper.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "h.db"), cfg)
	} else {
		c, err = hopper.NewClient(cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.StopNow() })
	return c
}

func enqueue(t *testing.T, c *hopper.Client, kind string, args any, opts *hopper.EnqueueOptions) hopper.ID {
	t.Helper()
	res, err := c.Enqueue(context.Background(), kind, args, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res.ID
}

func TestRequireEnqueued(t *testing.T) {
	t.Parallel()
	for _, sqlite := range []bool{false, true} {
		t.Run(fmt.Sprintf("sqlite=%v", sqlite), func(t *testing.T) {
			t.Parallel()
			c := client(t, sqlite)
			id := enqueue(t, c, "email", email{To: "ada@example.com"}, &hopper.EnqueueOptions{Queue: "mail", Priority: -2, UniqueKey: "welcome:ada"})
			enqueue(t, c, "email", email{To: "bob@example.com"}, nil)
			enqueue(t, c, "report", 7, nil)
			zero, minus2 := 0, -2

			if j := hoppertest.RequireEnqueued(t, c, hoppertest.Expect{Kind: "email", Args: email{To: "ada@example.com"},
				Queue: "mail", Priority: &minus2, UniqueKey: "welcome:ada", State: hopper.StateAvailable}); j == nil || j.ID != id {
				t.Errorf("RequireEnqueued returned %+v, want job %d", j, id)
			}
			// Args given as JSON, members in another order.
			hoppertest.RequireEnqueued(t, c, hoppertest.Expect{Kind: "email", Args: []byte(`{"to": "bob@example.com"}`), Priority: &zero})

			for _, tc := range []struct {
				want Expect
				msgs []string
			}{
				{Expect{Kind: "email", Args: email{To: "eve@example.com"}},
					[]string{`no job matches kind "email" with args {"to":"eve@example.com"}`, "2 jobs of the kind",
						`args is {"to":"ada@example.com"}, want {"to":"eve@example.com"}`}},
				{Expect{Kind: "email"}, []string{`2 jobs match kind "email", want 1`}},
				{Expect{Kind: "email", Args: email{To: "ada@example.com"}, Queue: "default"}, []string{`queue is mail, want default`}},
				{Expect{Kind: "sms"}, []string{`no job of kind "sms" at all`}},
				{Expect{}, []string{"Expect.Kind is empty"}},
			} {
				got := failure(func(tb testing.TB) { hoppertest.RequireEnqueued(tb, c, tc.want) })
				for _, m := range tc.msgs {
					if !strings.Contains(got, m) {
						t.Errorf("RequireEnqueued(%s): message %q lacks %q", tc.want, got, m)
					}
				}
			}
		})
	}
}

// Expect is hoppertest.Expect, shorter.
type Expect = hoppertest.Expect

func TestRequireManyEnqueued(t *testing.T) {
	t.Parallel()
	c := client(t, false)
	enqueue(t, c, "report", 1, nil)
	enqueue(t, c, "email", email{To: "a@x"}, nil)
	enqueue(t, c, "report", 2, &hopper.EnqueueOptions{MaxAttempts: 3})
	jobs := hoppertest.RequireManyEnqueued(t, c, Expect{Kind: "report", Args: 1}, Expect{Kind: "email"}, Expect{Kind: "report", Args: 2, MaxAttempts: 3})
	if len(jobs) != 3 || jobs[0].ID > jobs[1].ID || jobs[1].ID > jobs[2].ID {
		t.Errorf("RequireManyEnqueued returned %d jobs, want 3 in ID order", len(jobs))
	}
	// Only the kinds named count: the email job is not looked at.
	hoppertest.RequireManyEnqueued(t, c, Expect{Kind: "report", Args: 1}, Expect{Kind: "report", Args: 2})

	for _, tc := range []struct {
		want []Expect
		msg  string
	}{
		{[]Expect{{Kind: "report", Args: 2}, {Kind: "report", Args: 1}}, `job 1 of 2 (ID 1) does not match kind "report" with args 2: args is 1, want 2`},
		{[]Expect{{Kind: "report"}}, `2 jobs of kinds report, want 1: job 1 "report" 1; job 3 "report" 2`},
		{[]Expect{{Kind: "report"}, {Kind: "report", MaxAttempts: 4}}, `max attempts is 3, want 4`},
	} {
		if got := failure(func(tb testing.TB) { hoppertest.RequireManyEnqueued(tb, c, tc.want...) }); !strings.Contains(got, tc.msg) {
			t.Errorf("RequireManyEnqueued(%v): message %q lacks %q", tc.want, got, tc.msg)
		}
	}
}

func TestRequireNotEnqueued(t *testing.T) {
	t.Parallel()
	c := client(t, false)
	enqueue(t, c, "email", email{To: "a@x"}, nil)
	hoppertest.RequireNotEnqueued(t, c, Expect{Kind: "email", Args: email{To: "b@x"}})
	hoppertest.RequireNotEnqueued(t, c, Expect{Kind: "report"})
	got := failure(func(tb testing.TB) { hoppertest.RequireNotEnqueued(tb, c, Expect{Kind: "email"}) })
	if !strings.Contains(got, `1 job matches kind "email": job 1 (available)`) {
		t.Errorf("RequireNotEnqueued: message %q", got)
	}
}

func TestWorker(t *testing.T) {
	t.Parallel()
	ws := hopper.NewWorkers()
	calls := 0
	hopper.Register(ws, "sync", func(ctx context.Context, to string) (any, error) {
		calls++
		switch to {
		case "down":
			return nil, errors.New("upstream down")
		case "busy":
			return nil, hopper.Snooze(time.Minute)
		case "bad":
			return nil, hopper.Permanent(errors.New("no such account"))
		}
		return "synced " + to, nil
	}, nil)
	w := hoppertest.NewWorker(ws, hopper.Config{})
	now := time.Date(2100, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		to     string
		state  hopper.State
		result string
		runAt  time.Time
		err    string
	}{
		{to: "ok", state: hopper.StateCompleted, result: `"synced ok"`},
		{to: "down", state: hopper.StateRetrying, err: "upstream down"},
		{to: "busy", state: hopper.StateScheduled, runAt: now.Add(time.Minute)},
		{to: "bad", state: hopper.StateDead, err: "no such account"},
	} {
		j := w.Work(t, "sync", tc.to, nil, now)
		if j.State != tc.state || string(j.Result) != tc.result || !strings.Contains(j.LastError, tc.err) ||
			(!tc.runAt.IsZero() && !j.RunAt.Equal(tc.runAt)) {
			t.Errorf("Work(%q): state %s result %s last error %q run-at %v, want %s %s %q %v",
				tc.to, j.State, j.Result, j.LastError, j.RunAt, tc.state, tc.result, tc.err, tc.runAt)
		}
	}
	if calls != 4 {
		t.Errorf("handler called %d times, want 4", calls)
	}
	for _, tc := range []struct {
		kind string
		opts *hopper.EnqueueOptions
		msg  string
	}{
		{"nope", nil, `enqueue "nope"`},
		{"sync", &hopper.EnqueueOptions{RunAt: now.Add(time.Hour)}, "is not due at 2100-01-01T12:00:00Z: it runs at 2100-01-01T13:00:00Z"},
	} {
		if got := failure(func(tb testing.TB) { w.Work(tb, tc.kind, "ok", tc.opts, now) }); !strings.Contains(got, tc.msg) {
			t.Errorf("Work(%q, %+v): message %q lacks %q", tc.kind, tc.opts, got, tc.msg)
		}
	}
}
