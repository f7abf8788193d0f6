package storetest

import (
	"maps"
	"slices"
	"testing"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// count returns Count(p), failing the test on an error.
func (e *env) count(p store.ListParams) int {
	e.t.Helper()
	n, err := e.s.Count(e.ctx, p)
	if err != nil {
		e.t.Fatalf("Count(%+v): %v", p, err)
	}
	return n
}

// wantLabels fails unless j carries meta and tags.
func wantLabels(t *testing.T, what string, j *job.Job, meta map[string]string, tags []string) {
	t.Helper()
	if !maps.Equal(j.Meta, meta) || !slices.Equal(j.Tags, tags) {
		t.Errorf("%s: job %d has meta %v tags %q, want %v and %q", what, j.ID, j.Meta, j.Tags, meta, tags)
	}
}

func labelCases() []testCase {
	return []testCase{
		{"LabelsKeptThroughLifecycle", func(t *testing.T, e *env) {
			meta := map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tenant": "ünïcode ✓", "empty": ""}
			tags := []string{"billing", "eu-west:1", "a/b.c_d"}
			id := e.add(t0, &job.Job{Kind: "k", Queue: "q", Meta: meta, Tags: tags})
			plain := e.add(t0, &job.Job{Kind: "k", Queue: "other"})
			wantLabels(t, "Get", e.get(id), meta, tags)
			wantLabels(t, "Get of a job without labels", e.get(plain), nil, nil)
			running := e.claimExpect(at(1), "q", id)
			wantLabels(t, "Claim", running, meta, tags)
			e.finishOne(at(2), running, store.Outcome{State: job.StateRetrying, RunAt: at(3), Error: "again"})
			wantLabels(t, "after a failed attempt", e.get(id), meta, tags)
			running = e.claimExpect(at(4), "q", id)
			e.finishOne(at(5), running, store.Outcome{State: job.StateCompleted})
			wantLabels(t, "completed", e.get(id), meta, tags)
			wantLabels(t, "List", e.list(store.ListParams{Tag: "billing"})[0], meta, tags)
		}},
		{"ListAndCountByTag", func(t *testing.T, e *env) {
			var red, blue []job.ID
			for i := range 12 {
				tags := []string{"red"}
				if i%3 == 0 {
					tags = append(tags, "blue")
				}
				j := &job.Job{Kind: "k", Queue: "q" + string(rune('a'+i%2)), Tags: tags}
				id := e.add(at(i), j)
				red = append(red, id)
				if i%3 == 0 {
					blue = append(blue, id)
				}
				e.add(at(i), &job.Job{Kind: "k", Queue: "qa"}) // untagged, between them
			}
			e.add(at(20), &job.Job{Kind: "k", Queue: "qa", Tags: []string{"reddish"}})
			wantIDList(t, "List(tag red)", idsOf(e.list(store.ListParams{Tag: "red"})), red)
			wantIDList(t, "List(tag blue)", idsOf(e.list(store.ListParams{Tag: "blue"})), blue)
			wantIDList(t, "List(tag none)", idsOf(e.list(store.ListParams{Tag: "green"})), nil)
			wantIDList(t, "List(tag red, limit 3, after 2nd)", idsOf(e.list(store.ListParams{Tag: "red", Limit: 3, AfterID: red[1]})), red[2:5])
			desc := slices.Clone(red)
			slices.Reverse(desc)
			wantIDList(t, "List(tag red, desc, before last)", idsOf(e.list(store.ListParams{Tag: "red", Desc: true, AfterID: red[len(red)-1], Limit: 2})), desc[1:3])
			wantIDList(t, "List(tag blue, queue qa)", idsOf(e.list(store.ListParams{Tag: "blue", Queue: "qa"})), []job.ID{blue[0], blue[2]})
			if n := e.count(store.ListParams{Tag: "red"}); n != 12 {
				t.Errorf("Count(tag red): %d, want 12", n)
			}
			if n := e.count(store.ListParams{Tag: "blue", Queue: "qb"}); n != 2 {
				t.Errorf("Count(tag blue, queue qb): %d, want 2", n)
			}
			// Two red jobs finish: by state, and after a purge.
			e.finishOne(at(30), e.claimExpect(at(30), "qb", red[1]), store.Outcome{State: job.StateCompleted})
			e.finishOne(at(30), e.claimExpect(at(30), "qb", red[3]), store.Outcome{State: job.StateCompleted})
			if n := e.count(store.ListParams{Tag: "red", States: []job.State{job.StateCompleted}}); n != 2 {
				t.Errorf("Count(tag red, completed): %d, want 2", n)
			}
			wantIDList(t, "List(tag red, completed)", idsOf(e.list(store.ListParams{Tag: "red", States: []job.State{job.StateCompleted}})), []job.ID{red[1], red[3]})
			e.purge(store.PurgeParams{States: []job.State{job.StateCompleted}, All: true}, 2)
			if n := e.count(store.ListParams{Tag: "red"}); n != 10 {
				t.Errorf("Count(tag red) after the purge: %d, want 10", n)
			}
			if n := e.count(store.ListParams{Tag: "red", States: []job.State{job.StateCompleted}}); n != 0 {
				t.Errorf("Count(tag red, completed) after the purge: %d, want 0", n)
			}
		}},
		{"ScheduleLabelsGoToItsJobs", func(t *testing.T, e *env) {
			s := newSchedule("tagged", at(60_000))
			s.Meta, s.Tags = map[string]string{"team": "ops"}, []string{"nightly", "cron"}
			e.addSchedule(s)
			got := e.getSchedule("tagged")
			if !maps.Equal(got.Meta, s.Meta) || !slices.Equal(got.Tags, s.Tags) {
				t.Errorf("GetSchedule: meta %v tags %q, want %v and %q", got.Meta, got.Tags, s.Meta, s.Tags)
			}
			r := e.fire(got, at(60_000), at(60_000), at(120_000))
			if !r.Fired {
				t.Fatalf("FireSchedule: %+v, want fired", r)
			}
			wantLabels(t, "fired job", e.get(r.ID), s.Meta, s.Tags)
			wantIDList(t, "List(tag nightly)", idsOf(e.list(store.ListParams{Tag: "nightly"})), []job.ID{r.ID})
		}},
	}
}
