package cli

import (
	"strconv"
	"strings"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// parseID parses a job ID argument.
func parseID(s string) (hopper.ID, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 {
		return 0, usagef("bad job ID %q: want a positive number", s)
	}
	return hopper.ID(n), nil
}

func parseIDs(args []string) ([]hopper.ID, error) {
	ids := make([]hopper.ID, 0, len(args))
	for _, a := range args {
		id, err := parseID(a)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// parseStates parses a comma-separated list of states; "waiting" stands
// for scheduled, available and retrying, and "finished" for completed,
// cancelled and dead.
func parseStates(s string) ([]hopper.State, error) {
	var out []hopper.State
	for _, name := range strings.Split(s, ",") {
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "":
		case "waiting":
			out = append(out, job.WaitingStates...)
		case "finished":
			out = append(out, hopper.StateCompleted, hopper.StateCancelled, hopper.StateDead)
		default:
			st, err := job.ParseState(name)
			if err != nil {
				return nil, usagef("--state: unknown state %q; want scheduled, available, running, retrying, completed, cancelled, dead, waiting or finished", strings.TrimSpace(name))
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// parseQueues parses --queues q1,q2:limit.
func parseQueues(s string) (map[string]hopper.QueueConfig, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := make(map[string]hopper.QueueConfig)
	for _, part := range strings.Split(s, ",") {
		name, lim, hasLim := strings.Cut(strings.TrimSpace(part), ":")
		if name == "" {
			return nil, usagef("bad --queues %q: empty queue name", s)
		}
		var q hopper.QueueConfig
		if hasLim {
			n, err := strconv.Atoi(lim)
			if err != nil || n < 1 {
				return nil, usagef("bad --queues %q: limit of %s must be a positive number", s, name)
			}
			q.MaxWorkers = n
		}
		out[name] = q
	}
	return out, nil
}
