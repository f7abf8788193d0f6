package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/hopperq/hopper"
)

// TestIntegerBounds: on every store, max_attempts and priority beyond the
// bounds are a 400 naming the field — a job, a job of a batch, a schedule,
// a reschedule — and nothing is stored; the bounds themselves are kept.
func TestIntegerBounds(t *testing.T) {
	t.Parallel()
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: store})
			for _, tc := range []struct{ opt, field string }{
				{fmt.Sprintf(`"max_attempts":%d`, hopper.MaxAttemptsLimit+1), "max_attempts"},
				{`"max_attempts":2147483648`, "max_attempts"},
				{fmt.Sprintf(`"priority":%d`, hopper.MaxPriority+1), "priority"},
				{fmt.Sprintf(`"priority":%d`, hopper.MinPriority-1), "priority"},
				{`"priority":-9223372036854775808`, "priority"},
			} {
				e.do("POST", "/api/v1/jobs", `{"kind":"ok",`+tc.opt+`}`).fails(400, CodeInvalid, tc.field, "between")
				e.do("POST", "/api/v1/jobs/batch", `{"jobs":[{"kind":"ok"},{"kind":"ok",`+tc.opt+`}]}`).fails(400, CodeInvalid, "jobs[1]."+tc.field, "between")
				e.do("POST", "/api/v1/schedules", `{"name":"s","every":"1m","kind":"ok",`+tc.opt+`}`).fails(400, CodeInvalid, tc.field, "between")
			}
			if n, _ := e.c.Count(context.Background(), hopper.ListOptions{}); n != 0 {
				t.Errorf("%d jobs stored after refused requests", n)
			}
			e.do("GET", "/api/v1/schedules/s", "").fails(404, CodeNotFound, "name")

			var j hopper.Job
			e.do("POST", "/api/v1/jobs", fmt.Sprintf(`{"kind":"ok","delay":"1h","max_attempts":%d,"priority":%d}`, hopper.MaxAttemptsLimit, hopper.MaxPriority)).
				ok(http.StatusCreated, &j)
			got := e.job(j.ID)
			if got.MaxAttempts != hopper.MaxAttemptsLimit || got.Priority != hopper.MaxPriority {
				t.Errorf("job at the bounds: max attempts %d priority %d", got.MaxAttempts, got.Priority)
			}
			path := fmt.Sprintf("/api/v1/jobs/%d/reschedule", j.ID)
			for _, p := range []int{hopper.MaxPriority + 1, hopper.MinPriority - 1} {
				e.do("POST", path, fmt.Sprintf(`{"priority":%d}`, p)).fails(400, CodeInvalid, "priority", "between")
			}
			e.do("POST", path, fmt.Sprintf(`{"priority":%d}`, hopper.MinPriority)).ok(200, &j)
			if j.Priority != hopper.MinPriority {
				t.Errorf("rescheduled to priority %d: got %d", hopper.MinPriority, j.Priority)
			}
		})
	}
}
