package statsview

import (
	"encoding/json"
	"fmt"

	"github.com/hopperq/hopper"
)

// Job returns the public JSON of j, shared by the CLI's jobs get --json and
// the HTTP API's GET /jobs/{id}: the job's own JSON (hopper.Job's
// MarshalJSON) with the field wait_reason set to why, the reason the
// waiting job does not start (hopper.Client.WaitReason), left out if why
// is "".
func Job(j *hopper.Job, why string) ([]byte, error) {
	b, err := json.Marshal(j)
	if err != nil || why == "" {
		return b, err
	}
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("statsview: job %d's JSON is not an object", j.ID)
	}
	q, err := json.Marshal(why)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(b)+len(`,"wait_reason":`)+len(q))
	out = append(out, b[:len(b)-1]...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"wait_reason":`...)
	out = append(out, q...)
	return append(out, '}'), nil
}
