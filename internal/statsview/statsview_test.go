package statsview

import (
	"encoding/json"
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
