package job

import (
	"fmt"
	"strings"
	"time"
)

// State is where a job is in its life. Every job Enqueue accepted is in exactly
// one state at any moment; see docs/state-machine.md for the diagram.
//
// The numeric values are fixed (a test pins them) but never persisted: stores
// keep a state by its name (String), so inserting a state can never misread a
// stored job.
//
// The waiting states (Scheduled, Available, Retrying) hold jobs that have not
// started their next attempt; Running holds jobs a worker owns under a lease;
// Completed, Cancelled and Dead are final, except that an operator may retry a
// Dead job from the dead-letter queue.
type State uint8

// The job states. Each comment says who moves jobs in and out.
const (
	// StateScheduled: in from Enqueue or Reschedule with a run-at in the
	// future, or from Running when the handler snoozed the job (its
	// attempt not counted); out to Available when its time comes (promotion, done by the
	// store at claim time) or to Cancelled.
	StateScheduled State = 1
	// StateAvailable: in from Enqueue (run-at reached), promotion, a released
	// or rescued attempt, or a DLQ retry; out to Running when a worker claims
	// it, or to Cancelled.
	StateAvailable State = 2
	// StateRunning: in from a claim; out to Completed, Retrying, Dead or
	// Cancelled when the attempt ends, to Scheduled when the handler
	// snoozes the job, or back to Available when the attempt is released by
	// shutdown or rescued after its lease expired.
	StateRunning State = 3
	// StateRetrying: in from a failed attempt with attempts left, waiting for
	// its backoff; out to Available when the backoff has passed, to
	// Cancelled, or to Dead when a newer tick of its recurring schedule
	// supersedes it.
	StateRetrying State = 4
	// StateCompleted: in from a successful attempt. Final; removed by
	// retention.
	StateCompleted State = 5
	// StateCancelled: in from Cancel of a waiting job, or of a running job
	// whose attempt then fails, is given back by shutdown or whose worker
	// dies (a requested cancel is never lost). Final; removed by retention.
	StateCancelled State = 6
	// StateDead: the dead-letter queue. In from a permanent failure, from
	// running out of attempts, from a worker crashing under the job too
	// many times in a row, or from a retrying job superseded by the next
	// tick of its schedule; out to Available by a DLQ retry, or removed by
	// purge or retention.
	StateDead State = 7
)

// States lists every state in lifecycle order.
var States = []State{StateScheduled, StateAvailable, StateRunning, StateRetrying, StateCompleted, StateCancelled, StateDead}

var stateNames = [...]string{
	StateScheduled: "scheduled",
	StateAvailable: "available",
	StateRunning:   "running",
	StateRetrying:  "retrying",
	StateCompleted: "completed",
	StateCancelled: "cancelled",
	StateDead:      "dead",
}

// String returns the state's lower-case name, as used in the CLI and the API.
func (s State) String() string {
	if s >= StateScheduled && s <= StateDead {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// ParseState parses a state name as returned by String. Groups such as
// "waiting" are not states: callers wanting them use WaitingStates.
func ParseState(name string) (State, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, s := range States {
		if stateNames[s] == n {
			return s, nil
		}
	}
	return 0, fmt.Errorf("state %q: unknown; want one of scheduled, available, running, retrying, completed, cancelled, dead", name)
}

// MarshalText implements encoding.TextMarshaler.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *State) UnmarshalText(b []byte) error {
	v, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Waiting reports whether s is a waiting state: the job has not started its
// next attempt and can still be cancelled or rescheduled.
func (s State) Waiting() bool {
	return s == StateScheduled || s == StateAvailable || s == StateRetrying
}

// Finished reports whether s is final for the job's current run: Completed,
// Cancelled or Dead. Waiters return when a job reaches a finished state.
func (s State) Finished() bool {
	return s == StateCompleted || s == StateCancelled || s == StateDead
}

// WaitingStates lists the waiting states.
var WaitingStates = []State{StateScheduled, StateAvailable, StateRetrying}

// CanTransition reports whether a job may move from one state to another.
// It is the single place that holds Hopper's state machine; every store
// operation is one of these transitions, applied atomically. A zero from
// means "no job yet" (Enqueue).
func CanTransition(from, to State) bool {
	switch from {
	case 0: // enqueue
		return to == StateScheduled || to == StateAvailable
	case StateScheduled:
		// promotion, cancel, reschedule
		return to == StateAvailable || to == StateCancelled || to == StateScheduled
	case StateRetrying:
		// promotion, cancel, reschedule; superseded by its schedule's next tick
		return to == StateAvailable || to == StateCancelled || to == StateScheduled || to == StateDead
	case StateAvailable:
		// claim, cancel, reschedule into the future or in place
		return to == StateRunning || to == StateCancelled || to == StateScheduled || to == StateAvailable
	case StateRunning:
		// attempt ends; snoozed by its handler; or released by shutdown /
		// rescued after lease expiry
		return to == StateCompleted || to == StateRetrying || to == StateDead ||
			to == StateCancelled || to == StateAvailable || to == StateScheduled
	case StateDead:
		// DLQ retry
		return to == StateAvailable
	}
	return false // Completed and Cancelled are final
}

// CheckTransition returns a *TransitionError unless CanTransition(from, to).
func CheckTransition(id ID, from, to State) error {
	if CanTransition(from, to) {
		return nil
	}
	return &TransitionError{ID: id, From: from, To: to}
}

// WaitingState returns the waiting state of a job whose next attempt may start
// at runAt: Scheduled if runAt is after now, Available otherwise.
func WaitingState(runAt, now time.Time) State {
	if runAt.After(now) {
		return StateScheduled
	}
	return StateAvailable
}
