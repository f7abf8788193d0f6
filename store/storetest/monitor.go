package storetest

import (
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// notifyJob returns a Notify that makes one job of kind "notify" per call,
// its args the incident it was given, validated at now.
func notifyJob(t *testing.T, now time.Time, calls *int) func(*job.Incident) ([]*job.Job, error) {
	return func(in *job.Incident) ([]*job.Job, error) {
		*calls++
		args, _ := json.Marshal(in)
		return []*job.Job{validated(t, now, &job.Job{Kind: "notify", Queue: "notify", Args: args})}, nil
	}
}

func (e *env) openIncident(p store.OpenIncidentParams) store.IncidentResult {
	e.t.Helper()
	r, err := e.s.OpenIncident(e.ctx, p)
	if err != nil {
		e.t.Fatalf("OpenIncident(%s %s): %v", p.Incident.Subject, p.Incident.Problem, err)
	}
	return r
}

func (e *env) resolveIncident(p store.ResolveIncidentParams) store.IncidentResult {
	e.t.Helper()
	r, err := e.s.ResolveIncident(e.ctx, p)
	if err != nil {
		e.t.Fatalf("ResolveIncident(%d): %v", p.ID, err)
	}
	return r
}

func (e *env) incidents(p store.ListIncidentsParams) []*job.Incident {
	e.t.Helper()
	out, err := e.s.ListIncidents(e.ctx, p)
	if err != nil {
		e.t.Fatalf("ListIncidents(%+v): %v", p, err)
	}
	return out
}

func incidentIDs(ins []*job.Incident) []int64 {
	ids := []int64{}
	for _, in := range ins {
		ids = append(ids, in.ID)
	}
	return ids
}

func monitorCases() []testCase {
	return []testCase{
		{"IncidentOpensOncePerSubjectAndProblem", func(t *testing.T, e *env) {
			sc := newSchedule("nightly", at(60_000))
			e.addSchedule(sc)
			calls := 0
			in := &job.Incident{Subject: job.ScheduleSubject("nightly"), Problem: job.ProblemFailing, Job: 7, Detail: "3 runs dead", OpenedAt: at(1)}
			r := e.openIncident(store.OpenIncidentParams{Incident: in, Notify: notifyJob(t, at(1), &calls), Pause: "nightly"})
			if !r.Changed || r.Incident.ID == 0 || len(r.Jobs) != 1 || calls != 1 {
				t.Fatalf("first open: got changed %v incident %+v jobs %v notify calls %d, want opened, 1 job, 1 call", r.Changed, r.Incident, r.Jobs, calls)
			}
			want := *in
			want.ID = r.Incident.ID
			if !reflect.DeepEqual(r.Incident, &want) {
				t.Errorf("opened incident: got %+v, want %+v", r.Incident, &want)
			}
			n := e.get(r.Jobs[0])
			var got job.Incident
			if err := json.Unmarshal(n.Args, &got); err != nil || got.ID != want.ID || n.Kind != "notify" || n.State != job.StateAvailable {
				t.Errorf("notification job: got kind %s state %s args %s (%v), want notify available with incident %d", n.Kind, n.State, n.Args, err, want.ID)
			}
			if !e.getSchedule("nightly").Paused {
				t.Error("Pause: the schedule is not paused")
			}
			again := e.openIncident(store.OpenIncidentParams{Incident: &job.Incident{Subject: in.Subject, Problem: in.Problem, OpenedAt: at(2)},
				Notify: notifyJob(t, at(2), &calls)})
			if again.Changed || again.Incident == nil || again.Incident.ID != want.ID || len(again.Jobs) != 0 || calls != 1 {
				t.Errorf("second open: got changed %v incident %+v jobs %v calls %d, want the open one %d unchanged, no job", again.Changed, again.Incident, again.Jobs, calls, want.ID)
			}
			other := e.openIncident(store.OpenIncidentParams{Incident: &job.Incident{Subject: in.Subject, Problem: job.ProblemMissedStart, OpenedAt: at(3)}})
			if !other.Changed || other.Incident.ID == want.ID {
				t.Errorf("another problem of the subject: got changed %v id %d, want a new incident", other.Changed, other.Incident.ID)
			}
			if got := e.incidents(store.ListIncidentsParams{OpenOnly: true}); len(got) != 2 {
				t.Errorf("open incidents: got %v, want 2", incidentIDs(got))
			}
			// A pause of a schedule since removed is no error.
			e.openIncident(store.OpenIncidentParams{Incident: &job.Incident{Subject: "schedule:gone", Problem: job.ProblemFailing, OpenedAt: at(4)}, Pause: "gone"})
		}},
		{"IncidentResolvesOnce", func(t *testing.T, e *env) {
			in := e.openIncident(store.OpenIncidentParams{Incident: &job.Incident{Subject: "schedule:a", Problem: job.ProblemOverDuration, Job: 3, OpenedAt: at(1)}}).Incident
			calls := 0
			r := e.resolveIncident(store.ResolveIncidentParams{ID: in.ID, At: at(500), Notify: notifyJob(t, at(500), &calls)})
			if !r.Changed || len(r.Jobs) != 1 || calls != 1 || r.Incident.Open() {
				t.Fatalf("resolve: got changed %v incident %+v jobs %v calls %d, want resolved with 1 job", r.Changed, r.Incident, r.Jobs, calls)
			}
			wantTime(t, "ResolvedAt", r.Incident.ResolvedAt, at(500))
			wantTime(t, "OpenedAt", r.Incident.OpenedAt, at(1))
			again := e.resolveIncident(store.ResolveIncidentParams{ID: in.ID, At: at(600), Notify: notifyJob(t, at(600), &calls)})
			if again.Changed || len(again.Jobs) != 0 || calls != 1 {
				t.Errorf("second resolve: got changed %v jobs %v calls %d, want nothing", again.Changed, again.Jobs, calls)
			}
			wantTime(t, "ResolvedAt after a second resolve", again.Incident.ResolvedAt, at(500))
			if _, err := e.s.ResolveIncident(e.ctx, store.ResolveIncidentParams{ID: in.ID + 100, At: at(700)}); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("resolve an unknown incident: got %v, want ErrNotFound", err)
			}
			// The subject's next incident of the same problem is a new one.
			next := e.openIncident(store.OpenIncidentParams{Incident: &job.Incident{Subject: "schedule:a", Problem: job.ProblemOverDuration, OpenedAt: at(800)}})
			if !next.Changed || next.Incident.ID <= in.ID {
				t.Errorf("open after resolve: got changed %v id %d, want a new incident after %d", next.Changed, next.Incident.ID, in.ID)
			}
		}},
		{"IncidentNotifyErrorChangesNothing", func(t *testing.T, e *env) {
			boom := errors.New("boom")
			fail := func(*job.Incident) ([]*job.Job, error) { return nil, boom }
			if _, err := e.s.OpenIncident(e.ctx, store.OpenIncidentParams{Incident: &job.Incident{Subject: "schedule:a", Problem: job.ProblemFailing, OpenedAt: at(1)}, Notify: fail}); !errors.Is(err, boom) {
				t.Fatalf("open with a failing Notify: got %v, want boom", err)
			}
			if got := e.incidents(store.ListIncidentsParams{}); len(got) != 0 {
				t.Errorf("incidents after a failed open: got %v, want none", incidentIDs(got))
			}
			bad := func(*job.Incident) ([]*job.Job, error) { return []*job.Job{{Kind: "notify"}}, nil } // not validated
			if _, err := e.s.OpenIncident(e.ctx, store.OpenIncidentParams{Incident: &job.Incident{Subject: "schedule:a", Problem: job.ProblemFailing, OpenedAt: at(1)}, Notify: bad}); err == nil {
				t.Error("open with an unvalidated job: no error")
			}
			in := e.openIncident(store.OpenIncidentParams{Incident: &job.Incident{Subject: "schedule:a", Problem: job.ProblemFailing, OpenedAt: at(1)}}).Incident
			if _, err := e.s.ResolveIncident(e.ctx, store.ResolveIncidentParams{ID: in.ID, At: at(2), Notify: fail}); !errors.Is(err, boom) {
				t.Fatalf("resolve with a failing Notify: got %v, want boom", err)
			}
			if got := e.incidents(store.ListIncidentsParams{OpenOnly: true}); len(got) != 1 {
				t.Errorf("open incidents after a failed resolve: got %v, want still open", incidentIDs(got))
			}
			if n := e.count(store.ListParams{}); n != 0 {
				t.Errorf("jobs after failed notifications: got %d, want 0", n)
			}
			for _, bad := range []*job.Incident{
				{Problem: job.ProblemFailing, OpenedAt: at(1)},
				{Subject: "x", Problem: "late", OpenedAt: at(1)},
				{Subject: "x", Problem: job.ProblemFailing},
			} {
				var fe *job.FieldError
				if _, err := e.s.OpenIncident(e.ctx, store.OpenIncidentParams{Incident: bad}); !errors.As(err, &fe) {
					t.Errorf("OpenIncident(%+v): got %v, want a *job.FieldError", bad, err)
				}
			}
		}},
		{"IncidentList", func(t *testing.T, e *env) {
			var ids []int64
			for i, s := range []string{"schedule:a", "schedule:b", "schedule:a", "schedule:c"} {
				p := []job.Problem{job.ProblemFailing, job.ProblemFailing, job.ProblemMissedStart, job.ProblemOverDuration}[i]
				ids = append(ids, e.openIncident(store.OpenIncidentParams{Incident: &job.Incident{Subject: s, Problem: p, OpenedAt: at(i)}}).Incident.ID)
			}
			e.resolveIncident(store.ResolveIncidentParams{ID: ids[1], At: at(10)})
			for _, c := range []struct {
				p    store.ListIncidentsParams
				want []int64
			}{
				{store.ListIncidentsParams{}, []int64{ids[3], ids[2], ids[1], ids[0]}},
				{store.ListIncidentsParams{OpenOnly: true}, []int64{ids[3], ids[2], ids[0]}},
				{store.ListIncidentsParams{Subject: "schedule:a"}, []int64{ids[2], ids[0]}},
				{store.ListIncidentsParams{Limit: 2}, []int64{ids[3], ids[2]}},
				{store.ListIncidentsParams{BeforeID: ids[2]}, []int64{ids[1], ids[0]}},
				{store.ListIncidentsParams{Subject: "schedule:b", OpenOnly: true}, []int64{}},
			} {
				if got := incidentIDs(e.incidents(c.p)); !reflect.DeepEqual(got, c.want) {
					t.Errorf("ListIncidents(%+v): got %v, want %v", c.p, got, c.want)
				}
			}
		}},
		{"MonitorEmptyListsNotNil", func(t *testing.T, e *env) {
			// The API writes these lists as they come: nil would be null.
			ins, err := e.s.ListIncidents(e.ctx, store.ListIncidentsParams{})
			if err != nil || ins == nil {
				t.Errorf("ListIncidents on an empty store: got %#v, %v; want an empty list", ins, err)
			}
			pings, err := e.s.ListPings(e.ctx, store.ListPingsParams{Check: "none"})
			if err != nil || pings == nil {
				t.Errorf("ListPings of an unknown check: got %#v, %v; want an empty list", pings, err)
			}
			chans, err := e.s.ListChannels(e.ctx)
			if err != nil || chans == nil {
				t.Errorf("ListChannels on an empty store: got %#v, %v; want an empty list", chans, err)
			}
			checks, err := e.s.ListChecks(e.ctx)
			if err != nil || checks == nil {
				t.Errorf("ListChecks on an empty store: got %#v, %v; want an empty list", checks, err)
			}
		}},
		{"IncidentConcurrentOpensOne", func(t *testing.T, e *env) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			opened := 0
			for i := range 8 {
				wg.Go(func() {
					r, err := e.s.OpenIncident(e.ctx, store.OpenIncidentParams{Incident: &job.Incident{Subject: "schedule:x", Problem: job.ProblemMissedStart, OpenedAt: at(i)}})
					if err != nil {
						t.Errorf("OpenIncident: %v", err)
						return
					}
					if r.Changed {
						mu.Lock()
						opened++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if opened != 1 {
				t.Errorf("8 concurrent openings: %d opened, want 1", opened)
			}
		}},
		{"ChannelsRoundTrip", func(t *testing.T, e *env) {
			hook := &job.Channel{Name: "ops", Type: job.ChannelWebhook, URL: "https://example.com/hook", Secret: "s3cret", All: true,
				Events: []string{job.NotifyFailing}, CreatedAt: at(1)}
			mail := &job.Channel{Name: "mail", Type: job.ChannelEmail, SMTPAddr: "127.0.0.1:25", From: "hopper@example.com",
				To: []string{"a@example.com", "b@example.com"}, Username: "u", Password: "p", CreatedAt: at(2)}
			for _, c := range []*job.Channel{hook, mail} {
				if err := e.s.PutChannel(e.ctx, c); err != nil {
					t.Fatalf("PutChannel(%s): %v", c.Name, err)
				}
			}
			got, err := e.s.GetChannel(e.ctx, "ops")
			if err != nil || !reflect.DeepEqual(got, hook) {
				t.Errorf("GetChannel(ops): got %+v, %v; want %+v", got, err, hook)
			}
			list, err := e.s.ListChannels(e.ctx)
			if err != nil || len(list) != 2 || list[0].Name != "mail" || !reflect.DeepEqual(list[0], mail) {
				t.Errorf("ListChannels: got %+v, %v; want mail then ops", list, err)
			}
			hook2 := hook.Clone()
			hook2.URL, hook2.Secret = "https://example.com/other", ""
			if err := e.s.PutChannel(e.ctx, hook2); err != nil {
				t.Fatalf("PutChannel replace: %v", err)
			}
			if got, _ := e.s.GetChannel(e.ctx, "ops"); got == nil || got.URL != hook2.URL || got.Secret != "" {
				t.Errorf("replaced channel: got %+v, want %+v", got, hook2)
			}
			var fe *job.FieldError
			if err := e.s.PutChannel(e.ctx, &job.Channel{Name: "bad", Type: "pager"}); !errors.As(err, &fe) || fe.Field != "type" {
				t.Errorf("PutChannel(bad type): got %v, want a *job.FieldError on type", err)
			}
			if err := e.s.RemoveChannel(e.ctx, "ops"); err != nil {
				t.Fatalf("RemoveChannel: %v", err)
			}
			if _, err := e.s.GetChannel(e.ctx, "ops"); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("GetChannel after remove: got %v, want ErrNotFound", err)
			}
			if err := e.s.RemoveChannel(e.ctx, "ops"); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("RemoveChannel twice: got %v, want ErrNotFound", err)
			}
		}},
		{"LastRunsOfSchedule", func(t *testing.T, e *env) {
			var want []job.ID
			for i, st := range []job.State{job.StateDead, job.StateCompleted, job.StateCancelled, job.StateDead, job.StateRunning, job.StateDead} {
				j := e.inState(at(i), &job.Job{Kind: "tick", Queue: "cron", Schedule: "s", FireTime: at(i)}, st)
				if st == job.StateDead || st == job.StateCompleted {
					want = append([]job.ID{j.ID}, want...)
				}
				e.inState(at(i), &job.Job{Kind: "tick", Queue: "cron", Schedule: "other", FireTime: at(i)}, job.StateDead)
			}
			got, err := e.s.LastRuns(e.ctx, store.LastRunsParams{Schedule: "s", Limit: 3})
			if err != nil {
				t.Fatalf("LastRuns: %v", err)
			}
			var ids []job.ID
			for _, j := range got {
				ids = append(ids, j.ID)
			}
			if !reflect.DeepEqual(ids, want[:3]) {
				t.Errorf("LastRuns(s, 3): got %v, want %v (completed and dead, newest first)", ids, want[:3])
			}
			if got[0].State != job.StateDead || got[0].Schedule != "s" {
				t.Errorf("LastRuns(s)[0]: got state %s schedule %q, want dead of s", got[0].State, got[0].Schedule)
			}
			if _, err := e.s.LastRuns(e.ctx, store.LastRunsParams{Schedule: "s"}); err == nil {
				t.Error("LastRuns with limit 0: no error")
			}
		}},
		{"ScheduleMonitorRoundTrip", func(t *testing.T, e *env) {
			sc := newSchedule("watched", at(60_000))
			sc.Monitor = &job.Monitor{StartGrace: 30 * time.Second, MaxDuration: time.Hour, AlertAfterFailures: 3, PauseOnFailures: true, Channels: []string{"ops"}}
			e.addSchedule(sc)
			if got := e.getSchedule("watched").Monitor; !reflect.DeepEqual(got, sc.Monitor) {
				t.Errorf("stored monitor: got %+v, want %+v", got, sc.Monitor)
			}
			e.addSchedule(newSchedule("plain", at(60_000)))
			if got := e.getSchedule("plain").Monitor; got != nil {
				t.Errorf("schedule without a monitor: got %+v, want nil", got)
			}
		}},
	}
}
