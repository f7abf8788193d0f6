package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// newCheck returns a valid check every minute with a 30 s grace.
func newCheck(name, pingID string) *job.Check {
	return &job.Check{Name: name, PingID: pingID, Period: time.Minute, Grace: 30 * time.Second, CreatedAt: at(0)}
}

// Ping IDs of the cases (22 characters and more).
const (
	pingA = "AAAAAAAAAAAAAAAAAAAAAA"
	pingB = "BBBBBBBBBBBBBBBBBBBBBB"
)

func (e *env) addCheck(c *job.Check) {
	e.t.Helper()
	if err := e.s.AddCheck(e.ctx, c); err != nil {
		e.t.Fatalf("AddCheck(%s): %v", c.Name, err)
	}
}

func (e *env) getCheck(name string) *job.Check {
	e.t.Helper()
	c, err := e.s.GetCheck(e.ctx, name)
	if err != nil {
		e.t.Fatalf("GetCheck(%s): %v", name, err)
	}
	return c
}

func (e *env) ping(id string, p *job.Ping, keep int) (*job.Check, *job.Ping) {
	e.t.Helper()
	c, pg, err := e.s.PingCheck(e.ctx, store.PingCheckParams{PingID: id, Ping: p, Keep: keep})
	if err != nil {
		e.t.Fatalf("PingCheck(%s, %s): %v", id, p.Kind, err)
	}
	return c, pg
}

func (e *env) pings(name string, limit int) []*job.Ping {
	e.t.Helper()
	out, err := e.s.ListPings(e.ctx, store.ListPingsParams{Check: name, Limit: limit})
	if err != nil {
		e.t.Fatalf("ListPings(%s): %v", name, err)
	}
	return out
}

func pingSeqs(ps []*job.Ping) []int64 {
	var out []int64
	for _, p := range ps {
		out = append(out, p.Seq)
	}
	return out
}

func checkCases() []testCase {
	return []testCase{
		{"CheckAddGetListRemove", func(t *testing.T, e *env) {
			c := newCheck("backup", pingA)
			c.Cron, c.Period, c.TimeZone, c.Channels = "0 3 * * *", 0, "Europe/Berlin", []string{"ops"}
			e.addCheck(c)
			e.addCheck(newCheck("alpha", pingB))
			got := e.getCheck("backup")
			if got.Name != "backup" || got.PingID != pingA || got.Cron != "0 3 * * *" || got.TimeZone != "Europe/Berlin" ||
				got.Grace != 30*time.Second || len(got.Channels) != 1 || got.Channels[0] != "ops" || got.Paused || !got.LastPingAt.IsZero() {
				t.Errorf("GetCheck: got %+v, want the check added", got)
			}
			wantTime(t, "CreatedAt", got.CreatedAt, at(0))
			list, err := e.s.ListChecks(e.ctx)
			if err != nil || len(list) != 2 || list[0].Name != "alpha" || list[1].Name != "backup" {
				t.Fatalf("ListChecks: got %v (%v), want alpha, backup", list, err)
			}
			if err := e.s.RemoveCheck(e.ctx, "backup"); err != nil {
				t.Fatalf("RemoveCheck: %v", err)
			}
			if _, err := e.s.GetCheck(e.ctx, "backup"); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("GetCheck of a removed check: got %v, want ErrNotFound", err)
			}
			if err := e.s.RemoveCheck(e.ctx, "backup"); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("RemoveCheck twice: got %v, want ErrNotFound", err)
			}
			if _, _, err := e.s.PingCheck(e.ctx, store.PingCheckParams{PingID: pingA, Ping: &job.Ping{Kind: job.PingSuccess, At: at(1)}, Keep: 10}); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("ping of a removed check: got %v, want ErrNotFound", err)
			}
		}},
		{"CheckDuplicateNameOrPingID", func(t *testing.T, e *env) {
			e.addCheck(newCheck("a", pingA))
			if err := e.s.AddCheck(e.ctx, newCheck("a", pingB)); !errors.Is(err, job.ErrDuplicate) {
				t.Errorf("same name: got %v, want ErrDuplicate", err)
			}
			if err := e.s.AddCheck(e.ctx, newCheck("b", pingA)); !errors.Is(err, job.ErrDuplicate) {
				t.Errorf("same ping ID: got %v, want ErrDuplicate", err)
			}
			bad := newCheck("c", "short")
			var fe *job.FieldError
			if err := e.s.AddCheck(e.ctx, bad); !errors.As(err, &fe) {
				t.Errorf("bad ping ID: got %v, want a *FieldError", err)
			}
			if _, err := e.s.GetCheck(e.ctx, "b"); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("refused check stored: %v", err)
			}
		}},
		{"CheckPingAppliesAndLogs", func(t *testing.T, e *env) {
			e.addCheck(newCheck("a", pingA))
			e.addCheck(newCheck("b", pingB))
			e.ping(pingA, &job.Ping{Kind: job.PingStart, RID: "r1", At: at(1000)}, 10)
			e.ping(pingA, &job.Ping{Kind: job.PingStart, RID: "r2", At: at(2000)}, 10)
			c, p := e.ping(pingA, &job.Ping{Kind: job.PingSuccess, RID: "r1", At: at(5000), Method: "POST", Body: "done", UserAgent: "curl/8"}, 10)
			if p.Seq != 3 || p.Check != "a" || p.Duration != 4*time.Second {
				t.Errorf("success of r1: got seq %d check %q duration %s, want 3, a, 4s", p.Seq, p.Check, p.Duration)
			}
			if len(c.Runs) != 1 || c.Runs[0].RID != "r2" || c.Failed || c.LastDuration != 4*time.Second || c.Pings != 3 {
				t.Errorf("check after r1's success: got %+v, want r2 open, up, last duration 4s, 3 pings", c)
			}
			wantTime(t, "LastPingAt", c.LastPingAt, at(5000))
			code := 3
			e.ping(pingA, &job.Ping{Kind: job.PingFail, ExitCode: &code, RID: "r2", At: at(6000)}, 10)
			e.ping(pingA, &job.Ping{Kind: job.PingLog, At: at(7000), Body: "note"}, 10)
			got := e.getCheck("a")
			if !got.Failed || len(got.Runs) != 0 || got.Pings != 5 || got.Status(at(7000)) != job.CheckDown {
				t.Errorf("stored check after fail and log: got %+v, want failed, no run open, 5 pings, down", got)
			}
			wantTime(t, "LastPingAt after a log", got.LastPingAt, at(6000))
			ps := e.pings("a", 0)
			if len(ps) != 5 || ps[0].Kind != job.PingLog || ps[0].Body != "note" || ps[1].Kind != job.PingFail || ps[1].ExitCode == nil ||
				*ps[1].ExitCode != 3 || ps[1].Duration != 4*time.Second || ps[2].Body != "done" || ps[2].Method != "POST" || ps[2].UserAgent != "curl/8" {
				t.Errorf("ping log: got %+v, want the 5 pings newest first", ps)
			}
			wantTime(t, "ping At", ps[2].At, at(5000))
			if ps := e.pings("b", 0); len(ps) != 0 || e.getCheck("b").Pings != 0 {
				t.Errorf("another check's pings: got %v, want none", pingSeqs(ps))
			}
			if ps := e.pings("a", 2); len(ps) != 2 || ps[0].Seq != 5 {
				t.Errorf("Limit 2: got %v, want [5 4]", pingSeqs(ps))
			}
			before := e.getCheck("a")
			if _, _, err := e.s.PingCheck(e.ctx, store.PingCheckParams{PingID: "ZZZZZZZZZZZZZZZZZZZZZZ", Ping: &job.Ping{Kind: job.PingSuccess, At: at(8000)}, Keep: 10}); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("unknown ping ID: got %v, want ErrNotFound", err)
			}
			if after := e.getCheck("a"); after.Pings != before.Pings || len(e.pings("a", 0)) != 5 {
				t.Errorf("an unknown ping ID changed check a: %d pings", after.Pings)
			}
			c, _ = e.ping(pingA, &job.Ping{Kind: job.PingSuccess, At: at(9000)}, 10)
			if c.Failed || c.Status(at(9000)) != job.CheckUp {
				t.Errorf("success after the failure: got %+v, want up", c)
			}
		}},
		{"CheckPingLogKeepsLatest", func(t *testing.T, e *env) {
			e.addCheck(newCheck("a", pingA))
			for i := range 7 {
				e.ping(pingA, &job.Ping{Kind: job.PingSuccess, At: at(1000 * (i + 1))}, 3)
			}
			if got := pingSeqs(e.pings("a", 0)); len(got) != 3 || got[0] != 7 || got[2] != 5 {
				t.Errorf("after 7 pings keeping 3: got %v, want [7 6 5]", got)
			}
			if _, _, err := e.s.PingCheck(e.ctx, store.PingCheckParams{PingID: pingA, Ping: &job.Ping{Kind: job.PingSuccess, At: at(9000)}, Keep: 0}); err == nil {
				t.Error("Keep 0: no error")
			}
			if err := e.s.RemoveCheck(e.ctx, "a"); err != nil {
				t.Fatal(err)
			}
			e.addCheck(newCheck("a", pingB))
			if got := e.pings("a", 0); len(got) != 0 {
				t.Errorf("a check re-added under a removed one's name: got pings %v, want none", pingSeqs(got))
			}
		}},
		{"CheckPingArmed", func(t *testing.T, e *env) {
			// PingCheck returns the ping as Apply left it: Armed when it
			// gave the check a deadline (the client then wakes the
			// monitor), which the log does not keep.
			e.addCheck(newCheck("a", pingA))
			for i, s := range []struct {
				resume bool
				kind   job.PingKind
				want   bool
			}{
				{kind: job.PingSuccess, want: true}, {kind: job.PingSuccess},
				{resume: true, kind: job.PingSuccess, want: true}, {kind: job.PingFail}, {kind: job.PingSuccess, want: true},
			} {
				if s.resume {
					for _, paused := range []bool{true, false} {
						if _, err := e.s.PauseCheck(e.ctx, "a", paused); err != nil {
							t.Fatal(err)
						}
					}
				}
				if _, p := e.ping(pingA, &job.Ping{Kind: s.kind, At: at(1000 * (i + 1))}, 10); p.Armed != s.want {
					t.Errorf("ping %d (%s): Armed %v, want %v", i+1, s.kind, p.Armed, s.want)
				}
			}
			for _, p := range e.pings("a", 0) {
				if p.Armed {
					t.Errorf("ping %d in the log: Armed, which is not kept", p.Seq)
				}
			}
		}},
		{"CheckPauseAndResumeByPing", func(t *testing.T, e *env) {
			e.addCheck(newCheck("a", pingA))
			if _, err := e.s.PauseCheck(e.ctx, "nope", true); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("PauseCheck of an unknown check: got %v, want ErrNotFound", err)
			}
			c, err := e.s.PauseCheck(e.ctx, "a", true)
			if err != nil || !c.Paused || !e.getCheck("a").Paused {
				t.Fatalf("PauseCheck: got %+v (%v), want paused", c, err)
			}
			e.ping(pingA, &job.Ping{Kind: job.PingStart, At: at(1000)}, 10)
			if !e.getCheck("a").Paused {
				t.Error("a start ping resumed a paused check")
			}
			e.ping(pingA, &job.Ping{Kind: job.PingSuccess, At: at(2000)}, 10)
			if e.getCheck("a").Paused {
				t.Error("a success ping did not resume the paused check")
			}
			e.ping(pingA, &job.Ping{Kind: job.PingFail, At: at(3000)}, 10)
			if _, err := e.s.PauseCheck(e.ctx, "a", true); err != nil {
				t.Fatal(err)
			}
			c, err = e.s.PauseCheck(e.ctx, "a", false)
			if err != nil || c.Paused || c.Failed || !c.LastPingAt.IsZero() || c.Status(at(999_999)) != job.CheckNew {
				t.Errorf("resumed: got %+v (%v), want a new check", c, err)
			}
			if got := e.getCheck("a"); got.Status(at(999_999)) != job.CheckNew {
				t.Errorf("stored after resume: got %+v, want new", got)
			}
		}},
		{"CheckDownIncident", func(t *testing.T, e *env) {
			r := e.openIncident(store.OpenIncidentParams{Incident: &job.Incident{Subject: job.CheckSubject("a"), Problem: job.ProblemCheckDown,
				Detail: "no ping", OpenedAt: at(1)}})
			if !r.Changed || r.Incident.Problem != job.ProblemCheckDown {
				t.Fatalf("open check_down: got %+v, want opened", r)
			}
			if got := e.incidents(store.ListIncidentsParams{Subject: "check:a", OpenOnly: true}); len(got) != 1 {
				t.Errorf("open incidents of check:a: got %v, want 1", incidentIDs(got))
			}
		}},
	}
}
