package httpapi

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestScheduleNextRunsN: GET /schedules/{name}?n=N lists N fire times in
// the schedule's zone; N outside 1..1000 is a 400 naming n.
func TestScheduleNextRunsN(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.do("POST", "/api/v1/schedules", `{"name":"lh","cron":"*/30 * * * *","time_zone":"Australia/Lord_Howe","kind":"ok"}`).ok(http.StatusCreated, nil)
	var s struct {
		NextRuns []time.Time `json:"next_runs"`
	}
	e.do("GET", "/api/v1/schedules/lh?n=1000", "").ok(http.StatusOK, &s)
	if len(s.NextRuns) != 1000 {
		t.Fatalf("n=1000: %d times", len(s.NextRuns))
	}
	for i := 1; i < len(s.NextRuns); i++ {
		if d := s.NextRuns[i].Sub(s.NextRuns[i-1]); d != 30*time.Minute {
			t.Errorf("times %d and %d are %s apart, want 30m", i-1, i, d)
		}
		if _, off := s.NextRuns[i].Zone(); off != 10*3600+1800 && off != 11*3600 {
			t.Errorf("time %d: %s, want Lord Howe's offset", i, s.NextRuns[i])
		}
	}
	e.do("GET", "/api/v1/schedules/lh?n=1", "").ok(http.StatusOK, &s)
	if len(s.NextRuns) != 1 {
		t.Errorf("n=1: %d times", len(s.NextRuns))
	}
	e.do("GET", "/api/v1/schedules/lh", "").ok(http.StatusOK, &s)
	if len(s.NextRuns) != NextRuns {
		t.Errorf("no n: %d times, want %d", len(s.NextRuns), NextRuns)
	}
	for _, n := range []string{"0", "1001", "-3", "ten", "1.5"} {
		e.do("GET", "/api/v1/schedules/lh?n="+n, "").fails(400, CodeInvalid, "n", "1 to 1000")
	}
	e.do("GET", "/api/v1/schedules/lh?n=", "").fails(400, CodeInvalid, "n")
	e.do("GET", "/api/v1/schedules/lh?n=2&n=3", "").fails(400, CodeInvalid, "n", "more than once")
}

// TestScheduleCatchUpAPI: the catch-up fields are taken and shown.
func TestScheduleCatchUpAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	var s struct {
		CatchUp       string `json:"catch_up"`
		CatchUpWindow string `json:"catch_up_window"`
		CatchUpMax    int    `json:"catch_up_max"`
	}
	e.do("POST", "/api/v1/schedules", `{"name":"a","every":"1m","catch_up":"all","catch_up_window":"3h","catch_up_max":200,"kind":"ok"}`).ok(http.StatusCreated, &s)
	if s.CatchUp != "all" || s.CatchUpWindow != "3h0m0s" || s.CatchUpMax != 200 {
		t.Errorf("catch-up all: %+v", s)
	}
	e.do("POST", "/api/v1/schedules", `{"name":"b","every":"1m","kind":"ok"}`).ok(http.StatusCreated, &s)
	if s.CatchUp != "one" {
		t.Errorf("default catch-up: %+v", s)
	}
	var j struct {
		Jitter     string `json:"jitter"`
		JitterMode string `json:"jitter_mode"`
	}
	e.do("POST", "/api/v1/schedules", `{"name":"c","every":"1h","jitter":"10m","jitter_mode":"stable","kind":"ok"}`).ok(http.StatusCreated, &j)
	if j.Jitter != "10m0s" || j.JitterMode != "stable" {
		t.Errorf("jitter: %+v", j)
	}
}

// TestScheduleOverlapCancelAPI: overlap "cancel" is taken, shown, and a
// run now of such a schedule cancels its waiting previous job.
func TestScheduleOverlapCancelAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{}) // not started: runs stay available
	var s struct {
		Overlap string `json:"overlap"`
	}
	e.do("POST", "/api/v1/schedules", `{"name":"c","every":"1h","overlap":"cancel","kind":"ok"}`).ok(http.StatusCreated, &s)
	if s.Overlap != "cancel" {
		t.Errorf("overlap %q, want cancel", s.Overlap)
	}
	var first, second struct {
		ID    int64  `json:"id"`
		State string `json:"state"`
	}
	e.do("POST", "/api/v1/schedules/c/run", "").ok(http.StatusCreated, &first)
	e.do("POST", "/api/v1/schedules/c/run", "").ok(http.StatusCreated, &second)
	e.do("GET", "/api/v1/jobs/"+strconv.FormatInt(first.ID, 10), "").ok(http.StatusOK, &first)
	if first.State != "cancelled" || second.State != "available" {
		t.Errorf("after two runs now: first %s, second %s; want cancelled, available", first.State, second.State)
	}
}

// TestScheduleOverlapBufferAPI: overlap "buffer-one" is taken and shown; a
// run now while the previous job waits is buffered (202), shown in the
// schedule's "buffered", and a third is refused (409): the buffer is full.
func TestScheduleOverlapBufferAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{}) // not started: runs stay available
	var s struct {
		Overlap  string   `json:"overlap"`
		Buffered []string `json:"buffered"`
	}
	e.do("POST", "/api/v1/schedules", `{"name":"b","every":"1h","overlap":"buffer-one","kind":"ok"}`).ok(http.StatusCreated, &s)
	if s.Overlap != "buffer-one" {
		t.Errorf("overlap %q, want buffer-one", s.Overlap)
	}
	var first struct {
		ID int64 `json:"id"`
	}
	e.do("POST", "/api/v1/schedules/b/run", "").ok(http.StatusCreated, &first)
	var buffered struct {
		Buffered    bool   `json:"buffered"`
		PreviousJob int64  `json:"previous_job"`
		Overlap     string `json:"overlap"`
	}
	e.do("POST", "/api/v1/schedules/b/run", "").ok(http.StatusAccepted, &buffered)
	if !buffered.Buffered || buffered.PreviousJob != first.ID || buffered.Overlap != "buffer-one" {
		t.Errorf("second run now: %+v, want buffered behind job %d", buffered, first.ID)
	}
	e.do("GET", "/api/v1/schedules/b", "").ok(http.StatusOK, &s)
	if len(s.Buffered) != 1 {
		t.Errorf("schedule's buffered runs: %v, want one", s.Buffered)
	}
	if r := e.do("POST", "/api/v1/schedules/b/run", ""); r.status != http.StatusConflict {
		t.Errorf("third run now with the buffer full: status %d, want 409", r.status)
	}
}

// TestScheduleMonitorAndOutputKept: GET /schedules and /schedules/{name}
// show a schedule's monitor as set and output_kept, its output retention
// with the defaults applied.
func TestScheduleMonitorAndOutputKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.do("POST", "/api/v1/schedules", `{"name":"w","every":"1m","kind":"ok","monitor":{"start_grace":"5s","max_duration":"1h","alert_after_failures":3,"pause_on_failures":true,"channels":["ops"]},"output_retention":{"succeeded":1,"failed":-1,"max_age":"48h"}}`).ok(http.StatusCreated, nil)
	e.do("POST", "/api/v1/schedules", `{"name":"z","every":"1m","kind":"ok"}`).ok(http.StatusCreated, nil)
	type kept struct {
		Succeeded int    `json:"succeeded"`
		Failed    int    `json:"failed"`
		MaxAge    string `json:"max_age"`
	}
	type sched struct {
		Name    string `json:"name"`
		Monitor *struct {
			StartGrace         string   `json:"start_grace"`
			MaxDuration        string   `json:"max_duration"`
			AlertAfterFailures int      `json:"alert_after_failures"`
			PauseOnFailures    bool     `json:"pause_on_failures"`
			Channels           []string `json:"channels"`
		} `json:"monitor"`
		OutputKept *kept `json:"output_kept"`
	}
	var w sched
	e.do("GET", "/api/v1/schedules/w", "").ok(http.StatusOK, &w)
	if m := w.Monitor; m == nil || m.StartGrace != "5s" || m.MaxDuration != "1h0m0s" || m.AlertAfterFailures != 3 || !m.PauseOnFailures ||
		len(m.Channels) != 1 || m.Channels[0] != "ops" {
		t.Errorf("monitor %+v", w.Monitor)
	}
	if w.OutputKept == nil || *w.OutputKept != (kept{1, 0, "48h0m0s"}) {
		t.Errorf("output_kept %+v, want 1 succeeded, 0 failed, 48h", w.OutputKept)
	}
	var list struct {
		Schedules []sched `json:"schedules"`
	}
	e.do("GET", "/api/v1/schedules", "").ok(http.StatusOK, &list)
	if len(list.Schedules) != 2 || list.Schedules[1].Name != "z" || list.Schedules[1].Monitor != nil ||
		list.Schedules[1].OutputKept == nil || *list.Schedules[1].OutputKept != (kept{3, 10, "0s"}) {
		t.Errorf("list: %+v", list.Schedules)
	}
}
