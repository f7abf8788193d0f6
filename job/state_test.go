package job

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestCanTransition spells out the whole state machine: every pair of
// states, allowed or not. docs/state-machine.md draws the same table.
func TestCanTransition(t *testing.T) {
	t.Parallel()
	const (
		new_ = State(0)
		sch  = StateScheduled
		ava  = StateAvailable
		run  = StateRunning
		ret  = StateRetrying
		com  = StateCompleted
		can  = StateCancelled
		dea  = StateDead
	)
	allowed := map[State][]State{
		new_: {sch, ava},
		sch:  {sch, ava, can},
		ava:  {sch, ava, run, can},
		run:  {sch, ava, ret, com, can, dea}, // sch: snoozed by its handler
		ret:  {sch, ava, can, dea},
		com:  {},
		can:  {},
		dea:  {ava},
	}
	for from, tos := range allowed {
		for _, to := range append([]State{new_}, States...) {
			want := false
			for _, a := range tos {
				want = want || a == to
			}
			if got := CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want)
			}
			err := CheckTransition(7, from, to)
			var te *TransitionError
			if want != (err == nil) || (!want && !errors.As(err, &te)) {
				t.Errorf("CheckTransition(%s, %s) = %v", from, to, err)
			}
		}
	}
}

// TestStateValues pins the states' values and names: a stored or printed
// state must never change meaning.
func TestStateValues(t *testing.T) {
	t.Parallel()
	want := []struct {
		s    State
		v    uint8
		name string
	}{
		{StateScheduled, 1, "scheduled"}, {StateAvailable, 2, "available"}, {StateRunning, 3, "running"},
		{StateRetrying, 4, "retrying"}, {StateCompleted, 5, "completed"}, {StateCancelled, 6, "cancelled"},
		{StateDead, 7, "dead"},
	}
	if len(States) != len(want) {
		t.Fatalf("States has %d states, want %d", len(States), len(want))
	}
	for i, w := range want {
		if uint8(w.s) != w.v || w.s.String() != w.name || States[i] != w.s {
			t.Errorf("state %d: value %d name %q, want %d %q", i, uint8(w.s), w.s.String(), w.v, w.name)
		}
	}
}

func TestStateNames(t *testing.T) {
	t.Parallel()
	for _, s := range States {
		got, err := ParseState(s.String())
		if err != nil || got != s {
			t.Errorf("ParseState(%q) = %v, %v; want %v", s.String(), got, err, s)
		}
		b, _ := s.MarshalText()
		var u State
		if err := u.UnmarshalText(b); err != nil || u != s {
			t.Errorf("text round trip of %v: got %v, %v", s, u, err)
		}
	}
	if _, err := ParseState("pending"); err == nil {
		t.Error("ParseState(pending): want an error")
	}
	if got := State(99).String(); got != "state(99)" {
		t.Errorf("State(99).String() = %q", got)
	}
}

func TestStateClasses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s                 State
		waiting, finished bool
	}{
		{StateScheduled, true, false}, {StateAvailable, true, false}, {StateRetrying, true, false},
		{StateRunning, false, false},
		{StateCompleted, false, true}, {StateCancelled, false, true}, {StateDead, false, true},
	} {
		if tc.s.Waiting() != tc.waiting || tc.s.Finished() != tc.finished {
			t.Errorf("%s: Waiting %v Finished %v, want %v %v", tc.s, tc.s.Waiting(), tc.s.Finished(), tc.waiting, tc.finished)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		j     Job
		field string // "" means valid
	}{
		{"ok", Job{Kind: "k", Queue: "q", MaxAttempts: 1}, ""},
		{"empty kind", Job{Queue: "q", MaxAttempts: 1}, "kind"},
		{"blank kind", Job{Kind: "  ", Queue: "q", MaxAttempts: 1}, "kind"},
		{"bad args", Job{Kind: "k", Queue: "q", MaxAttempts: 1, Args: []byte("{")}, "args"},
		{"args not UTF-8", Job{Kind: "k", Queue: "q", MaxAttempts: 1, Args: []byte("\"\xff\"")}, "args"},
		{"args too large", Job{Kind: "k", Queue: "q", MaxAttempts: 1, Args: []byte(`"` + strings.Repeat("a", MaxArgsSize) + `"`)}, "args"},
		{"no queue", Job{Kind: "k", MaxAttempts: 1}, "queue"},
		{"no attempts", Job{Kind: "k", Queue: "q"}, "max_attempts"},
		{"negative attempts", Job{Kind: "k", Queue: "q", MaxAttempts: -1}, "max_attempts"},
		{"negative timeout", Job{Kind: "k", Queue: "q", MaxAttempts: 1, Timeout: -time.Second}, "timeout"},
		{"far future", Job{Kind: "k", Queue: "q", MaxAttempts: 1, RunAt: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)}, "run_at"},
		{"before 1970", Job{Kind: "k", Queue: "q", MaxAttempts: 1, RunAt: time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)}, "run_at"},
		{"long queue", Job{Kind: "k", Queue: string(make([]byte, 300)), MaxAttempts: 1}, "queue"},
		{"NUL in queue", Job{Kind: "k", Queue: "a\x00b", MaxAttempts: 1}, "queue"},
		{"newline in kind", Job{Kind: "k\n", Queue: "q", MaxAttempts: 1}, "kind"},
		{"NUL in unique key", Job{Kind: "k", Queue: "q", MaxAttempts: 1, UniqueKey: "u\x00"}, "unique_key"},
		{"tab in unique key", Job{Kind: "k", Queue: "q", MaxAttempts: 1, UniqueKey: "a\tb"}, ""},
		{"spaces and symbols in queue", Job{Kind: "k", Queue: "a b!é", MaxAttempts: 1}, ""},
		{"func with args", Job{Func: func(context.Context) (any, error) { return nil, nil }, Queue: "q", MaxAttempts: 1, Args: []byte("1")}, "args"},
	} {
		err := tc.j.Validate(now)
		var fe *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%s: got %v, want a FieldError on %q", tc.name, err, tc.field)
		}
	}
	j := Job{Kind: "k", Queue: "q", MaxAttempts: 3, RunAt: now.Add(time.Minute)}
	if err := j.Validate(now); err != nil {
		t.Fatal(err)
	}
	if j.State != StateScheduled || !j.CreatedAt.Equal(now) {
		t.Errorf("got state %s created %v", j.State, j.CreatedAt)
	}
	j = Job{Kind: "k", Queue: "q", MaxAttempts: 3}
	if err := j.Validate(now); err != nil || j.State != StateAvailable || !j.RunAt.Equal(now) {
		t.Errorf("no run-at: got %v state %s run-at %v", err, j.State, j.RunAt)
	}
}

// TestJSON checks the public JSON form: durations as strings, states and
// overlap policies by name, and a round trip.
func TestJSON(t *testing.T) {
	t.Parallel()
	j := Job{ID: 3, Kind: "k", Queue: "q", Timeout: 90 * time.Second, State: StateRetrying,
		Attempts: []Attempt{{Attempt: 1, Duration: 1500 * time.Millisecond, Backoff: time.Minute, Outcome: "retrying"}}}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"timeout":"1m30s"`, `"state":"retrying"`, `"duration":"1.5s"`, `"backoff":"1m0s"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	var back Job
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Timeout != j.Timeout || back.State != j.State || len(back.Attempts) != 1 || back.Attempts[0].Duration != j.Attempts[0].Duration {
		t.Errorf("round trip: got %+v", back)
	}
	sc := Schedule{Name: "s", Overlap: OverlapAllow, Options: Options{Queue: "q", Timeout: time.Hour}}
	b, _ = json.Marshal(sc)
	if !strings.Contains(string(b), `"overlap":"allow"`) || !strings.Contains(string(b), `"timeout":"1h0m0s"`) || !strings.Contains(string(b), `"kind":"","queue":"q"`) {
		t.Errorf("schedule JSON %s", b)
	}
}

func TestCloneSharesNothing(t *testing.T) {
	t.Parallel()
	j := &Job{Args: []byte(`{"a":1}`), Result: []byte(`2`), Attempts: []Attempt{{Result: []byte(`3`)}}}
	c := j.Clone()
	c.Args[0], c.Result[0], c.Attempts[0].Result[0] = 'x', 'x', 'x'
	if string(j.Args) != `{"a":1}` || string(j.Result) != `2` || string(j.Attempts[0].Result) != `3` {
		t.Errorf("Clone shares bytes: %s %s %s", j.Args, j.Result, j.Attempts[0].Result)
	}
}
