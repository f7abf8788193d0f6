package pgstore

import (
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
)

// TestKeylessHintGenerations: a keyless read of a queue that found no job
// sets the queue's hint unless the queue was cleared while it was in
// flight; clears of other queues (a plain queue's enqueues) leave it be,
// and a reset does not.
func TestKeylessHintGenerations(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := newKeylessHints()
	h.now = func() time.Time { return t0 }

	gen := h.start("keyed")
	h.clearJobs([]*job.Job{{Queue: "plain"}})
	h.clearKeys(map[string]floorKey{"other": {}})
	h.end("keyed", "", gen, time.Millisecond, true, false)
	if !h.skip("keyed", "") || !h.skip("keyed", "a") {
		t.Error("a read of keyed with only other queues cleared meanwhile: no hint, want one for any kind")
	}

	h.clearJobs([]*job.Job{{Queue: "keyed", Key: "k"}})
	if !h.skip("keyed", "") {
		t.Error("a keyed job's enqueue cleared the hint")
	}
	for _, c := range []func(){
		func() { h.clearJobs([]*job.Job{{Queue: "keyed"}}) },
		func() { h.clearKeys(map[string]floorKey{"keyed": {}}) },
		func() { h.clearKeys(nil) },
	} {
		gen := h.start("keyed")
		c()
		h.end("keyed", "", gen, time.Millisecond, true, false)
		if h.skip("keyed", "") {
			t.Error("a read of keyed cleared meanwhile set the hint")
		}
	}
	if len(h.reads) != 0 {
		t.Errorf("reads in flight left: %v", h.reads)
	}
}
