package job

import (
	"errors"
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
		run:  {ava, ret, com, can, dea},
		ret:  {sch, ava, can},
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
		{"ok", Job{Kind: "k"}, ""},
		{"empty kind", Job{}, "kind"},
		{"blank kind", Job{Kind: "  "}, "kind"},
		{"bad args", Job{Kind: "k", Args: []byte("{")}, "args"},
		{"negative attempts", Job{Kind: "k", MaxAttempts: -1}, "max_attempts"},
		{"negative timeout", Job{Kind: "k", Timeout: -time.Second}, "timeout"},
		{"far future", Job{Kind: "k", RunAt: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}, "run_at"},
		{"long queue", Job{Kind: "k", Queue: string(make([]byte, 300))}, "queue"},
	} {
		err := tc.j.Validate(now, 25)
		var fe *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%s: got %v, want a FieldError on %q", tc.name, err, tc.field)
		}
	}
	j := Job{Kind: "k", RunAt: now.Add(time.Minute)}
	if err := j.Validate(now, 25); err != nil {
		t.Fatal(err)
	}
	if j.Queue != DefaultQueue || j.MaxAttempts != 25 || j.State != StateScheduled || !j.CreatedAt.Equal(now) {
		t.Errorf("defaults: got queue %q attempts %d state %s created %v", j.Queue, j.MaxAttempts, j.State, j.CreatedAt)
	}
}
