package statsview

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hopperq/hopper"
)

func TestOf(t *testing.T) {
	t.Parallel()
	st := hopper.Stats{
		Queues: map[string]map[hopper.State]int{
			"default": {hopper.StateScheduled: 1, hopper.StateAvailable: 2, hopper.StateRetrying: 3, hopper.StateRunning: 4, hopper.StateCompleted: 5},
			"emails":  {hopper.StateAvailable: 10, hopper.StateDead: 7},
		},
		Finished: map[hopper.State]int{hopper.StateCompleted: 9, hopper.StateDead: 1},
	}
	b, err := json.Marshal(struct {
		Counts
		Finished map[string]int `json:"finished"`
	}{Of(st), Finished(st)})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"queues":{"default":{"available":2,"cancelled":0,"completed":5,"dead":0,"retrying":3,"running":4,"scheduled":1},` +
		`"emails":{"available":10,"cancelled":0,"completed":0,"dead":7,"retrying":0,"running":0,"scheduled":0}},` +
		`"totals":{"available":12,"cancelled":0,"completed":5,"dead":7,"retrying":3,"running":4,"scheduled":1},` +
		`"waiting":16,"running":4,"total":32,"finished":{"cancelled":0,"completed":9,"dead":1}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// TestJob: a job's JSON is hopper.Job's own, with wait_reason added only
// when there is a reason, every other field as it was.
func TestJob(t *testing.T) {
	t.Parallel()
	j := &hopper.Job{ID: 7, Kind: "exec", Queue: "mail", Key: "tenant=42", Args: []byte(`{"command":"echo a>b"}`)}
	plain, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Job(j, "")
	if err != nil || string(got) != string(plain) {
		t.Fatalf("Job(j, \"\") = %s, %v; want the job's own JSON %s", got, err, plain)
	}
	got, err = Job(j, "key tenant=42 at its limit of 2")
	if err != nil {
		t.Fatal(err)
	}
	var with, without map[string]any
	if err := json.Unmarshal(got, &with); err != nil {
		t.Fatalf("Job(j, why) is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(plain, &without); err != nil {
		t.Fatal(err)
	}
	if with["wait_reason"] != "key tenant=42 at its limit of 2" {
		t.Errorf("wait_reason = %v, want the reason", with["wait_reason"])
	}
	delete(with, "wait_reason")
	if !reflect.DeepEqual(with, without) {
		t.Errorf("Job(j, why) changed other fields:\n%v\nwant\n%v", with, without)
	}
}
