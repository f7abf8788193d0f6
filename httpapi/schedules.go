package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/jsondur"
	"github.com/hopperq/hopper/internal/wire"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/kinds"
)

// scheduleView is a schedule as the API shows it: its public JSON, its
// times (next_run_at, last_fire_at, last_skip_at, created_at) in its own
// zone (a cron schedule's time_zone, else UTC) as RFC 3339 with that
// zone's offset, with next_runs, its next NextRuns fire times in the same
// zone — empty while it is paused, and only the next one for a
// fixed-delay schedule (the ones after depend on when its jobs finish) —
// and output_kept, its output_retention with the defaults applied.
type scheduleView struct {
	*hopper.Schedule
	NextRuns []time.Time
}

// outputKept is a schedule's output retention with its defaults applied:
// counts from 0 (none kept), max_age "0s" for no limit.
type outputKept struct {
	Succeeded int              `json:"succeeded"`
	Failed    int              `json:"failed"`
	MaxAge    jsondur.Duration `json:"max_age"`
}

// MarshalJSON implements json.Marshaler: the schedule's own JSON with
// "next_runs" and "output_kept" added.
func (v scheduleView) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(v.Schedule)
	if err != nil {
		return nil, err
	}
	r := v.OutputRetention.Resolved()
	extra, err := json.Marshal(struct {
		NextRuns   []time.Time `json:"next_runs"`
		OutputKept outputKept  `json:"output_kept"`
	}{v.NextRuns, outputKept{r.Succeeded, r.Failed, jsondur.Duration(r.MaxAge)}})
	if err != nil {
		return nil, err
	}
	b = b[:len(b)-1] // the closing brace of the object
	b = append(b, ',')
	return append(b, extra[1:]...), nil
}

// view returns sc as the API shows it, its times in its zone, with its
// next n fire times: the stores return them in UTC, which next_run_at
// showed beside next_runs in the schedule's zone.
func view(sc *hopper.Schedule, n int) scheduleView {
	loc := sc.Location()
	v := *sc
	for _, t := range []*time.Time{&v.NextRunAt, &v.LastFireAt, &v.LastSkipAt, &v.CreatedAt} {
		if !t.IsZero() {
			*t = t.In(loc)
		}
	}
	return scheduleView{Schedule: &v, NextRuns: nextRuns(sc, n)}
}

// nextRuns returns up to n fire times of sc from its next one, in its
// zone (hopper.Schedule.NextRuns); none while it is paused or its next
// run waits for its job.
func nextRuns(sc *hopper.Schedule, n int) []time.Time {
	if sc.Paused || sc.NextRunAt.IsZero() {
		return []time.Time{}
	}
	out, err := sc.NextRuns(time.Now(), n)
	if err != nil {
		return []time.Time{}
	}
	return out
}

// schedules handles GET /schedules: every schedule, by name, with its
// next fire times.
func (a *api) schedules(w http.ResponseWriter, r *http.Request) error {
	scs, err := a.c.Schedules(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		Schedules []scheduleView `json:"schedules"`
	}{Schedules: make([]scheduleView, len(scs))}
	for i, sc := range scs {
		out.Schedules[i] = view(sc, NextRuns)
	}
	reply(w, http.StatusOK, out)
	return nil
}

// scheduleName reads the {name} of the path.
func scheduleName(r *http.Request) (string, error) {
	name := r.PathValue("name")
	if err := job.CheckName("name", name); err != nil {
		return "", err
	}
	return name, nil
}

// scheduleNotFound names the schedule in a not-found error.
func scheduleNotFound(err error, name string) error {
	if errors.Is(err, hopper.ErrNotFound) {
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Field: "name", Message: fmt.Sprintf("schedule %q not found", name)}
	}
	return err
}

// getSchedule handles GET /schedules/{name}[?n=N]: next_runs holds its
// next N fire times (default NextRuns, 1 to hopper.MaxNextRuns).
func (a *api) getSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleName(r)
	if err != nil {
		return err
	}
	q, err := parseQuery(r)
	if err != nil {
		return err
	}
	n := NextRuns
	v, given, err := q.number("n", 1, hopper.MaxNextRuns, func(s string) string {
		return fmt.Sprintf("want a whole number of fire times from 1 to %d, got %q", hopper.MaxNextRuns, s)
	})
	if err != nil {
		return err
	}
	if given {
		n = int(v)
	}
	sc, err := a.c.GetSchedule(r.Context(), name)
	if err != nil {
		return scheduleNotFound(err, name)
	}
	reply(w, http.StatusOK, view(sc, n))
	return nil
}

// addSchedule handles POST /schedules: adds a recurring schedule (201), or
// replaces one of the same name with "replace": true; a name taken is 409
// duplicate. A bad cron expression, interval or time zone is a 400 naming
// cron, every or time_zone.
func (a *api) addSchedule(w http.ResponseWriter, r *http.Request) error {
	var sr wire.Schedule
	if err := decodeBody(r, &sr); err != nil {
		return err
	}
	if kinds.RunsCommand(sr.Kind) { // the route needs admin, which includes exec: the rule, stated
		if err := a.needExec(r, "a schedule of kind "+sr.Kind); err != nil {
			return err
		}
	}
	o, err := sr.ScheduleOptions()
	if err != nil {
		return err
	}
	sc, err := a.c.AddSchedule(r.Context(), sr.Name, o)
	if errors.Is(err, hopper.ErrDuplicate) {
		return &Error{Status: http.StatusConflict, Code: CodeDuplicate, Field: "name",
			Message: fmt.Sprintf(`schedule %q exists; give "replace": true to replace it`, sr.Name)}
	}
	if err != nil {
		e := toError(err, func(fe *hopper.FieldError) string {
			f := strings.TrimPrefix(fe.Field, "options.")
			switch f {
			case "spec", "next_run_at":
				if sr.Every != nil {
					return "every"
				}
				return "cron"
			}
			return f
		})
		if e == nil {
			return err
		}
		return e
	}
	httpauth.Note(r, "schedule", sr.Name, "kind", sr.Kind, "replace", sr.Replace)
	reply(w, http.StatusCreated, view(sc, NextRuns))
	return nil
}

// setSchedule runs pause or resume on the schedule of the path and replies
// with it afterwards.
func (a *api) setSchedule(w http.ResponseWriter, r *http.Request, fn func(*hopper.Client, *http.Request, string) error) error {
	name, err := scheduleName(r)
	if err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	if err := fn(a.c, r, name); err != nil {
		return scheduleNotFound(err, name)
	}
	sc, err := a.c.GetSchedule(r.Context(), name)
	if err != nil {
		return scheduleNotFound(err, name)
	}
	reply(w, http.StatusOK, view(sc, NextRuns))
	return nil
}

// pauseSchedule handles POST /schedules/{name}/pause; pausing a paused
// schedule succeeds.
func (a *api) pauseSchedule(w http.ResponseWriter, r *http.Request) error {
	return a.setSchedule(w, r, func(c *hopper.Client, r *http.Request, name string) error {
		return c.PauseSchedule(r.Context(), name)
	})
}

// resumeSchedule handles POST /schedules/{name}/resume: ticks missed while
// paused are not replayed.
func (a *api) resumeSchedule(w http.ResponseWriter, r *http.Request) error {
	return a.setSchedule(w, r, func(c *hopper.Client, r *http.Request, name string) error {
		return c.ResumeSchedule(r.Context(), name)
	})
}

// removeSchedule handles DELETE /schedules/{name}; the jobs it fired stay.
func (a *api) removeSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleName(r)
	if err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	if err := a.c.RemoveSchedule(r.Context(), name); err != nil {
		return scheduleNotFound(err, name)
	}
	reply(w, http.StatusOK, map[string]string{"removed": name})
	return nil
}

// runSchedule handles POST /schedules/{name}/run: runs the schedule now as
// a manual run of its job (201 with the job). With overlap skip, a run
// while its previous job is available or running is 409 conflict naming
// that job, unless ?force=true; with buffer-one or buffer-all it is kept
// waiting for that job (202 with {"buffered": true, …}), or 409 when the
// buffer is full. An exec schedule needs exec scope, as
// enqueueing an exec job does.
func (a *api) runSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleName(r)
	if err != nil {
		return err
	}
	q, err := parseQuery(r)
	if err != nil {
		return err
	}
	var o hopper.RunScheduleOptions
	if o.Force, err = q.flag("force"); err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	sc, err := a.c.GetSchedule(r.Context(), name)
	if err != nil {
		return scheduleNotFound(err, name)
	}
	if kinds.RunsCommand(sc.Kind) {
		if err := a.needExec(r, "running a schedule of kind "+sc.Kind); err != nil {
			return err
		}
	}
	j, err := a.c.RunSchedule(r.Context(), name, o)
	var busy *hopper.ScheduleBusyError
	if errors.As(err, &busy) && busy.Buffered {
		httpauth.Note(r, "schedule", name, "buffered", true)
		reply(w, http.StatusAccepted, map[string]any{"schedule": name, "buffered": true, "previous_job": busy.Job, "overlap": busy.Overlap})
		return nil
	}
	if err != nil {
		return scheduleNotFound(err, name)
	}
	httpauth.Note(r, "schedule", name, "job", j.ID, "force", o.Force)
	reply(w, http.StatusCreated, j)
	return nil
}

// backfillSchedule handles POST /schedules/{name}/backfill with a body
// {"from": T, "to": T}: enqueues the jobs of the schedule's past ticks in
// the range, each once, through its overlap policy and catch-up cap
// (Client.BackfillSchedule), and answers 200 with what it did. An exec
// schedule needs exec scope, as its run now does.
func (a *api) backfillSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleName(r)
	if err != nil {
		return err
	}
	var b wire.Backfill
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	from, to, err := b.Range()
	if err != nil {
		return err
	}
	sc, err := a.c.GetSchedule(r.Context(), name)
	if err != nil {
		return scheduleNotFound(err, name)
	}
	if kinds.RunsCommand(sc.Kind) {
		if err := a.needExec(r, "backfilling a schedule of kind "+sc.Kind); err != nil {
			return err
		}
	}
	res, err := a.c.BackfillSchedule(r.Context(), name, from, to)
	if err != nil {
		return scheduleNotFound(err, name)
	}
	httpauth.Note(r, "schedule", name, "from", from, "to", to, "fired", len(res.Fired))
	reply(w, http.StatusOK, res)
	return nil
}
