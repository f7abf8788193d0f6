package httpapi

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// TestRunSchedule: POST /schedules/{name}/run enqueues a manual run of the
// schedule's job at once; with overlap skip a second run while the first
// waits is 409 naming it, unless ?force=true.
func TestRunSchedule(t *testing.T) {
	t.Parallel()
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: store}) // not started: runs stay available
			e.do("POST", "/api/v1/schedules", `{"name":"nightly","cron":"30 2 * * *","kind":"typed","args":{"n":4},"queue":"reports","max_attempts":9}`).ok(201, nil)
			e.do("POST", "/api/v1/schedules/nightly/pause", "").ok(200, nil)
			type jobView struct {
				ID          hopper.ID `json:"id"`
				Kind        string    `json:"kind"`
				Queue       string    `json:"queue"`
				MaxAttempts int       `json:"max_attempts"`
				Args        struct{ N int }
				Schedule    string    `json:"schedule"`
				FireTime    time.Time `json:"fire_time"`
				Manual      bool      `json:"manual"`
				State       string    `json:"state"`
			}
			var j, g jobView
			e.do("POST", "/api/v1/schedules/nightly/run", "").ok(201, &j)
			if !j.Manual || j.Schedule != "nightly" || !j.FireTime.IsZero() || j.Kind != "typed" || j.Args.N != 4 ||
				j.Queue != "reports" || j.MaxAttempts != 9 || j.State != "available" {
				t.Errorf("run now: %+v, want a manual, available run of nightly with its args and options", j)
			}
			e.do("GET", "/api/v1/jobs/"+strconv.FormatInt(int64(j.ID), 10), "").ok(200, &g)
			if g.ID != j.ID || !g.Manual {
				t.Errorf("GET the run: %+v", g)
			}
			e.do("POST", "/api/v1/schedules/nightly/run", "").fails(409, CodeConflict, "", "previous job "+strconv.FormatInt(int64(j.ID), 10)+" is available", "force")
			e.do("POST", "/api/v1/schedules/nightly/run?force=true", "").ok(201, &g)
			if g.ID == j.ID || !g.Manual {
				t.Errorf("forced run: %+v", g)
			}
			e.do("POST", "/api/v1/schedules/nightly/run?force=maybe", "").fails(400, CodeInvalid, "force")
			e.do("POST", "/api/v1/schedules/nightly/run", `{"force":true}`).fails(400, CodeInvalid, "force")
			e.do("POST", "/api/v1/schedules/nope/run", "").fails(404, CodeNotFound, "name")
			sc, err := e.c.GetSchedule(context.Background(), "nightly")
			if err != nil || !sc.Paused || !sc.LastFireAt.IsZero() || sc.LastJobID != g.ID {
				t.Errorf("schedule after runs now: %+v, %v", sc, err)
			}
		})
	}
}

// TestRunScheduleExecScope: running an exec schedule now runs a command,
// so it needs exec scope as enqueueing an exec job does.
func TestRunScheduleExecScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{auth: tokens(t), cfg: withExec})
	e.doAs(adminToken, "POST", "/api/v1/schedules", `{"name":"x","every":"24h","kind":"exec","args":{"command":"true"}}`).ok(201, nil)
	e.doAs(adminToken, "POST", "/api/v1/schedules", `{"name":"o","every":"24h","kind":"ok"}`).ok(201, nil)
	e.doAs(readToken, "POST", "/api/v1/schedules/o/run", "").fails(403, CodeForbidden, "")
	e.doAs(writeToken, "POST", "/api/v1/schedules/x/run", "").fails(403, CodeForbidden, "", "exec or admin")
	if n := e.count(); n != 0 {
		t.Fatalf("refused runs now: %d jobs stored", n)
	}
	e.doAs(writeToken, "POST", "/api/v1/schedules/o/run", "").ok(201, nil)
	e.doAs(execToken, "POST", "/api/v1/schedules/x/run", "").ok(201, nil)
}

// TestBackfillScheduleAPI: POST /schedules/{name}/backfill enqueues the
// jobs of the past ticks of a range once (a repeat finds them existing);
// its body is checked; an exec schedule's backfill needs exec scope, as
// its run now does.
func TestBackfillScheduleAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{auth: tokens(t), cfg: withExec})
	e.doAs(adminToken, "POST", "/api/v1/schedules", `{"name":"x","cron":"0 * * * *","kind":"exec","args":{"command":"true"}}`).ok(201, nil)
	e.doAs(adminToken, "POST", "/api/v1/schedules", `{"name":"o","cron":"0 * * * *","overlap":"allow","kind":"ok"}`).ok(201, nil)
	const body = `{"from":"2020-01-01T00:00:00Z","to":"2020-01-01T03:00:00Z"}`
	e.doAs(readToken, "POST", "/api/v1/schedules/o/backfill", body).fails(403, CodeForbidden, "")
	e.doAs(writeToken, "POST", "/api/v1/schedules/x/backfill", body).fails(403, CodeForbidden, "", "exec or admin")
	if n := e.count(); n != 0 {
		t.Fatalf("refused backfills: %d jobs stored", n)
	}
	var res struct {
		Ticks   int     `json:"ticks"`
		Fired   []int64 `json:"fired"`
		Existed int     `json:"existed"`
	}
	e.doAs(writeToken, "POST", "/api/v1/schedules/o/backfill", body).ok(200, &res)
	if res.Ticks != 4 || len(res.Fired) != 4 {
		t.Errorf("backfill: %+v, want 4 ticks fired", res)
	}
	e.doAs(writeToken, "POST", "/api/v1/schedules/o/backfill", body).ok(200, &res)
	if res.Existed != 4 || len(res.Fired) != 0 {
		t.Errorf("repeated backfill: %+v, want 4 existing, none fired", res)
	}
	e.doAs(execToken, "POST", "/api/v1/schedules/x/backfill", body).ok(200, nil)
	e.doAs(writeToken, "POST", "/api/v1/schedules/o/backfill", `{"from":"2020-01-01T00:00:00Z"}`).fails(400, CodeInvalid, "to")
	e.doAs(writeToken, "POST", "/api/v1/schedules/o/backfill", `{"from":"yesterday","to":"2020-01-01T00:00:00Z"}`).fails(400, CodeInvalid, "from")
	e.doAs(writeToken, "POST", "/api/v1/schedules/nope/backfill", body).fails(404, CodeNotFound, "name")
}
