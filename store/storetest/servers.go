package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// serverCases check store.Registry, for stores that implement it.
func serverCases() []testCase {
	registry := func(e *env) store.Registry {
		e.t.Helper()
		r, ok := e.s.(store.Registry)
		if !ok {
			e.t.Skip("the store does not implement store.Registry")
		}
		return r
	}
	server := func(id string, startedMs int) store.Server {
		return store.Server{ID: id, Host: "host-" + id, PID: 100 + startedMs, Version: "v1.2.3", Workers: 8, StartedAt: at(startedMs)}
	}
	register := func(e *env, ms int, sv store.Server) {
		e.t.Helper()
		if err := registry(e).RegisterServer(e.ctx, store.RegisterServerParams{Now: at(ms), Server: sv}); err != nil {
			e.t.Fatalf("RegisterServer(%s at %d ms): %v", sv.ID, ms, err)
		}
	}
	list := func(e *env, ms int) []store.Server {
		e.t.Helper()
		out, err := registry(e).ListServers(e.ctx, store.ListServersParams{Now: at(ms), Lease: "maintenance"})
		if err != nil {
			e.t.Fatalf("ListServers(at %d ms): %v", ms, err)
		}
		return out
	}
	// brief is what a check compares of a record: all of it, times by
	// instant.
	brief := func(sv store.Server) string {
		return fmt.Sprintf("%s host %s pid %d version %s workers %d started %d beat %d running %d leader %v",
			sv.ID, sv.Host, sv.PID, sv.Version, sv.Workers, sv.StartedAt.Sub(t0).Milliseconds(),
			sv.HeartbeatAt.Sub(t0).Milliseconds(), sv.Running, sv.Leader)
	}
	want := func(t *testing.T, what string, got []store.Server, want ...store.Server) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: got %d servers %v, want %d", what, len(got), got, len(want))
		}
		for i := range got {
			if g, w := brief(got[i]), brief(want[i]); g != w {
				t.Errorf("%s: server %d is %s, want %s", what, i, g, w)
			}
		}
	}
	beat := func(sv store.Server, ms, running int, leader bool) store.Server {
		sv.HeartbeatAt, sv.Running, sv.Leader = at(ms), running, leader
		return sv
	}
	return []testCase{
		{"ServersRegisterAndList", func(t *testing.T, e *env) {
			want(t, "no server yet", list(e, 0))
			a, b := server(worker2, 0), server(worker1, 1000) // listed by start time, not by ID
			register(e, 2000, b)
			register(e, 3000, a)
			want(t, "registered", list(e, 4000), beat(a, 3000, 0, false), beat(b, 2000, 0, false))
		}},
		{"ServersHeartbeat", func(t *testing.T, e *env) {
			a := server(worker1, 0)
			register(e, 0, a)
			a.Workers, a.Version = 16, "v1.2.4" // a heart-beat rewrites the whole record
			a.Running, a.Leader = 7, true       // which ListServers ignores
			register(e, 5000, a)
			want(t, "after a heart-beat", list(e, 6000), beat(a, 5000, 0, false))
		}},
		{"ServersRunningJobs", func(t *testing.T, e *env) {
			a, b := server(worker1, 0), server(worker2, 1)
			register(e, 10, a)
			register(e, 10, b)
			e.addN(at(0), 4, "k", "q")
			one := e.claim(store.ClaimParams{Now: at(20), Limit: 3, Worker: worker1}).Jobs
			e.claim(store.ClaimParams{Now: at(20), Limit: 1, Worker: worker2})
			e.finishOne(at(30), one[0], store.Outcome{State: job.StateCompleted})
			e.add(at(40), &job.Job{Kind: "k", Queue: "q"}) // waiting: nobody's
			want(t, "running jobs by worker", list(e, 50), beat(a, 10, 2, false), beat(b, 10, 1, false))
		}},
		{"ServersLeader", func(t *testing.T, e *env) {
			l, ok := e.s.(store.Leader)
			if !ok {
				t.Skip("the store does not implement store.Leader")
			}
			a, b := server(worker1, 0), server(worker2, 1)
			register(e, 0, a)
			register(e, 0, b)
			if _, err := l.Lead(e.ctx, store.LeadParams{Now: at(0), Name: "maintenance", Holder: worker2, TTL: 10 * time.Second}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Lead(e.ctx, store.LeadParams{Now: at(0), Name: "other", Holder: worker1, TTL: 10 * time.Second}); err != nil {
				t.Fatal(err)
			}
			want(t, "while worker-2's lease runs", list(e, 9999), beat(a, 0, 0, false), beat(b, 0, 0, true))
			want(t, "once it expired", list(e, 10000), beat(a, 0, 0, false), beat(b, 0, 0, false))
		}},
		{"ServersRemoveAndPrune", func(t *testing.T, e *env) {
			r := registry(e)
			a, b, c := server("a", 0), server("b", 1), server("c", 2)
			register(e, 1000, a)
			register(e, 2000, b)
			register(e, 3000, c)
			if err := r.RemoveServer(e.ctx, "c"); err != nil {
				t.Fatalf("RemoveServer(c): %v", err)
			}
			if err := r.RemoveServer(e.ctx, "c"); err != nil {
				t.Fatalf("RemoveServer(c) again: %v, want nil", err)
			}
			n, err := r.PruneServers(e.ctx, store.PruneServersParams{Before: at(2000)})
			if err != nil || n != 1 {
				t.Fatalf("PruneServers(before 2000 ms): %d, %v; want 1, nil", n, err)
			}
			want(t, "after removing c and pruning a", list(e, 4000), beat(b, 2000, 0, false))
		}},
		{"ServersInvalid", func(t *testing.T, e *env) {
			r := registry(e)
			for _, c := range []struct {
				field string
				sv    store.Server
			}{
				{"id", store.Server{StartedAt: at(0)}},
				{"pid", store.Server{ID: "x", PID: -1, StartedAt: at(0)}},
				{"workers", store.Server{ID: "x", Workers: -1, StartedAt: at(0)}},
				{"started_at", store.Server{ID: "x"}},
			} {
				err := r.RegisterServer(e.ctx, store.RegisterServerParams{Now: at(0), Server: c.sv})
				if fe := (*job.FieldError)(nil); !errors.As(err, &fe) || fe.Field != c.field {
					t.Errorf("RegisterServer(%+v): %v, want a field error on %s", c.sv, err, c.field)
				}
			}
			want(t, "after refused registrations", list(e, 0))
		}},
	}
}
