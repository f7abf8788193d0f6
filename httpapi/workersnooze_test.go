package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// TestWorkerSnooze: the snooze verb puts a job back for later without
// counting its attempt (its output kept), holds its key with hold_key,
// is fenced by the lease token like complete and fail (409, nothing
// changed), and has a batch form that is all or none; the token of a
// snoozed lease is refused after the same worker fetched the job again.
func TestWorkerSnooze(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: st})
			ctx := context.Background()
			id := e.register("")
			base := "/api/v1/workers/" + id
			l := e.fetchOne(id)
			before := time.Now()
			var fin finishedView
			e.do("POST", base+"/snooze", `{"token":"`+l.Token+`","delay":"1h","reason":"429","output":{"log":"rate limited\n"}}`).ok(http.StatusOK, &fin)
			if len(fin.Jobs) != 1 || fin.Jobs[0].State != hopper.StateScheduled {
				t.Fatalf("snooze: %+v", fin)
			}
			j := e.job(l.Job.ID)
			a := j.Attempts[len(j.Attempts)-1]
			if j.Attempt != 0 || j.RunAt.Before(before.Add(59*time.Minute)) || a.Outcome != job.OutcomeSnoozed || a.Error != "snoozed for 1h0m0s: 429" {
				t.Fatalf("snoozed job: attempt %d, run-at %v, record %+v", j.Attempt, j.RunAt, a)
			}
			if o, err := e.c.Output(ctx, l.Job.ID, 1); err != nil || string(o.Log.Data) != "rate limited\n" {
				t.Fatalf("the snoozed attempt's output: %+v, %v", o, err)
			}
			// Stale now: 409, nothing changes.
			e.do("POST", base+"/snooze", `{"token":"`+l.Token+`","delay":"1s"}`).fails(http.StatusConflict, CodeConflict, "token")
			if e.job(l.Job.ID).RunAt.Before(before.Add(59 * time.Minute)) {
				t.Fatal("a refused snooze changed the job")
			}
			e.do("POST", base+"/snooze", `{"token":"`+l.Token+`","delay":"-1s"}`).fails(http.StatusBadRequest, CodeInvalid, "delay")

			// hold_key: the key's next job waits; another key's does not.
			r1, err := e.c.Enqueue(ctx, "remote", nil, &hopper.EnqueueOptions{Key: "tenant=1"})
			if err != nil {
				t.Fatal(err)
			}
			var res hopper.FetchResult
			e.do("POST", base+"/fetch", `{"max":1}`).ok(http.StatusOK, &res)
			if len(res.Leases) != 1 || res.Leases[0].Job.ID != r1.ID {
				t.Fatalf("fetch: %+v", res)
			}
			e.do("POST", base+"/snooze", `{"token":"`+res.Leases[0].Token+`","delay":"1h","hold_key":true}`).ok(http.StatusOK, &fin)
			if _, err := e.c.Enqueue(ctx, "remote", nil, &hopper.EnqueueOptions{Key: "tenant=1"}); err != nil {
				t.Fatal(err)
			}
			r3, err := e.c.Enqueue(ctx, "remote", nil, &hopper.EnqueueOptions{Key: "tenant=2"})
			if err != nil {
				t.Fatal(err)
			}
			e.do("POST", base+"/fetch", `{"max":4}`).ok(http.StatusOK, &res)
			if len(res.Leases) != 1 || res.Leases[0].Job.ID != r3.ID {
				t.Fatalf("fetch while tenant=1 is held: %+v, want only job %d", res, r3.ID)
			}
			e.do("POST", base+"/complete", `{"token":"`+res.Leases[0].Token+`"}`).ok(http.StatusOK, &fin)

			// The batch: all or none.
			l1, l2 := e.fetchOne(id), e.fetchOne(id)
			forged := l2.Token[:strings.LastIndexByte(l2.Token, '.')+1] + "AAAAAAAAAAAAAAAAAAAAAA"
			e.do("POST", base+"/snooze/batch", `{"snoozes":[{"token":"`+l1.Token+`","delay":"1m"},{"token":"`+forged+`","delay":"1m"}]}`).
				fails(http.StatusConflict, CodeConflict, "token")
			if e.job(l1.Job.ID).State != hopper.StateRunning {
				t.Fatal("a refused batch changed a job")
			}
			e.do("POST", base+"/snooze/batch", `{"snoozes":[{"token":"`+l1.Token+`","delay":"1m"},{"token":"`+l2.Token+`","delay":"2m"}]}`).ok(http.StatusOK, &fin)
			if len(fin.Jobs) != 2 || fin.Jobs[0].State != hopper.StateScheduled || fin.Jobs[1].State != hopper.StateScheduled {
				t.Fatalf("batch: %+v", fin)
			}

			// The token of a snoozed lease: the snooze did not count the
			// attempt, so the same worker fetching the job again runs the
			// same attempt number under a new claim. Complete, fail,
			// snooze and heartbeat with the old token are refused (409,
			// lost) and change nothing; the new token completes the job.
			old := e.fetchOne(id)
			e.do("POST", base+"/snooze", `{"token":"`+old.Token+`","delay":"0s"}`).ok(http.StatusOK, &fin)
			if len(fin.Jobs) != 1 || fin.Jobs[0].State != hopper.StateScheduled {
				t.Fatalf("snooze: %+v", fin)
			}
			var again hopper.FetchResult
			e.do("POST", base+"/fetch", `{"max":1,"wait":"5s"}`).ok(http.StatusOK, &again)
			if len(again.Leases) != 1 || again.Leases[0].Job.ID != old.Job.ID {
				t.Fatalf("fetch after the snooze: %+v, want job %d again", again, old.Job.ID)
			}
			cur := again.Leases[0]
			if cur.Job.Attempt != old.Job.Attempt || cur.Token == old.Token {
				t.Fatalf("second lease: attempt %d token %q, want attempt %d and a new token (old %q)",
					cur.Job.Attempt, cur.Token, old.Job.Attempt, old.Token)
			}
			held := e.job(old.Job.ID)
			e.do("POST", base+"/complete", `{"token":"`+old.Token+`","result":{"late":true}}`).fails(http.StatusConflict, CodeConflict, "token")
			e.do("POST", base+"/fail", `{"token":"`+old.Token+`","error":"late"}`).fails(http.StatusConflict, CodeConflict, "token")
			e.do("POST", base+"/snooze", `{"token":"`+old.Token+`","delay":"1h"}`).fails(http.StatusConflict, CodeConflict, "token")
			var hb hopper.HeartbeatResult
			e.do("POST", base+"/heartbeat", `{"tokens":["`+old.Token+`"]}`).ok(http.StatusOK, &hb)
			if len(hb.Lost) != 1 || hb.Lost[0] != old.Token {
				t.Errorf("heartbeat with the snoozed lease's token: %+v, want it lost", hb)
			}
			after := e.job(old.Job.ID)
			if after.State != hopper.StateRunning || after.Worker != id || after.Claims != cur.Job.Claims ||
				!after.LeaseUntil.Equal(held.LeaseUntil) || len(after.Attempts) != len(held.Attempts) || after.Result != nil {
				t.Fatalf("after the refused calls: %+v, want it running the second lease as before (%+v)", after, held)
			}
			e.do("POST", base+"/complete", `{"token":"`+cur.Token+`","result":{"ok":true}}`).ok(http.StatusOK, &fin)
			if len(fin.Jobs) != 1 || fin.Jobs[0].State != hopper.StateCompleted {
				t.Fatalf("complete with the new token: %+v", fin)
			}
			if j := e.job(old.Job.ID); string(j.Result) != `{"ok":true}` {
				t.Errorf("result: %s, want the new lease's", j.Result)
			}
		})
	}
}
