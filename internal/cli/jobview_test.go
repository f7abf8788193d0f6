package cli

import (
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// TestAttemptLineCountsSnoozes: jobs get shows the snoozed attempts, which
// do not count, beside the counted ones.
func TestAttemptLineCountsSnoozes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		outcomes []string
		want     string
	}{
		{nil, "0 of 3"},
		{[]string{job.OutcomeSnoozed}, "0 of 3 (+1 snoozed by its handler, not counted)"},
		{[]string{"retrying", job.OutcomeSnoozed, job.OutcomeReleased, job.OutcomeSnoozed},
			"0 of 3 (+1 released by a shutdown, not counted) (+2 snoozed by its handler, not counted)"},
	} {
		j := &hopper.Job{MaxAttempts: 3}
		for _, o := range tc.outcomes {
			j.Attempts = append(j.Attempts, job.Attempt{Outcome: o})
		}
		if got := attemptLine(j); got != tc.want {
			t.Errorf("attemptLine(%v) = %q, want %q", tc.outcomes, got, tc.want)
		}
	}
}
