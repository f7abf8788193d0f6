package dashboard

import (
	"net/http"
	"net/url"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// fireCount is how many upcoming fire times the schedules page shows.
const fireCount = 5

// scheduleView is one schedule on the schedules page.
type scheduleView struct {
	*hopper.Schedule
	Anchor    string
	Zone      string // the zone its times are shown in
	Next      []time.Time
	NextNote  string // what the times mean when not plain ticks
	LastJob   string // the page of the last job it fired
	PauseURL  string
	ResumeURL string
	RunURL    string
	// Incidents are its open incidents, newest first.
	Incidents []*hopper.Incident
	// KeptDefault says its output retention is the defaults.
	KeptDefault bool
}

// openIncidentsLimit bounds the open incidents the schedules page reads,
// in one call for every schedule.
const openIncidentsLimit = 500

func (h *handler) schedules(w http.ResponseWriter, r *http.Request) {
	scs, err := h.c.Schedules(r.Context())
	if err != nil {
		h.storeFailed(w, r, err)
		return
	}
	open, err := h.c.Incidents(r.Context(), hopper.IncidentFilter{Open: true, Limit: openIncidentsLimit})
	if err != nil {
		h.storeFailed(w, r, err)
		return
	}
	bySchedule := map[string][]*hopper.Incident{}
	for _, in := range open {
		if name, ok := job.ScheduleOfSubject(in.Subject); ok {
			bySchedule[name] = append(bySchedule[name], in)
		}
	}
	t := time.Now()
	views := make([]scheduleView, 0, len(scs))
	for _, sc := range scs {
		v := scheduleView{Schedule: sc, Anchor: scheduleAnchor(sc.Name), Incidents: bySchedule[sc.Name],
			KeptDefault: sc.OutputRetention == (hopper.OutputRetention{})}
		v.Next, v.NextNote, v.Zone = nextFires(sc, t, fireCount)
		if sc.LastJobID != 0 {
			v.LastJob = h.jobPath(sc.LastJobID)
		}
		base := h.url("/schedules/" + url.PathEscape(sc.Name))
		v.PauseURL, v.ResumeURL, v.RunURL = base+"/pause", base+"/resume", base+"/run"
		views = append(views, v)
	}
	h.render(w, r, http.StatusOK, "schedules", &page{Title: "Schedules", Nav: "schedules", Live: true, Data: views})
}

// nextFires returns the next n fire times of sc after now, computed from
// its spec and time zone as the scheduler computes them (package
// schedule, through maintenance.Rule), in the schedule's zone; a note
// when the times are not plain ticks (paused, fixed delay); and the zone's
// name.
//
// An active schedule's first time is its stored next tick, which may be
// overdue when no process runs the schedules. A paused one shows the
// times it would fire at if resumed now (resuming never replays missed
// ticks). A fixed-delay schedule counts each run from the previous one's
// end, so only its next run is known.
func nextFires(sc *job.Schedule, now time.Time, n int) ([]time.Time, string, string) {
	loc := sc.Location()
	rule, delay, err := sc.Rule()
	if err != nil {
		return nil, err.Error(), loc.String()
	}
	out, err := sc.NextRuns(now, n)
	if err != nil {
		return nil, err.Error(), loc.String()
	}
	note := ""
	switch {
	case rule == nil && sc.NextRunAt.IsZero() && !sc.Paused:
		note = delay.String() + " after the running job ends"
	case rule == nil && sc.Paused:
		note = "if resumed now; then " + delay.String() + " after each run ends"
	case rule == nil:
		note = "then " + delay.String() + " after each run ends"
	case sc.Paused:
		note = "if resumed now"
	}
	return out, note, loc.String()
}
