package job

import (
	"encoding/json"
	"time"

	"github.com/hopperq/hopper/internal/jsondur"
)

// The JSON form of jobs, attempts and schedules is what the hopper command
// prints and the HTTP API serves: durations are strings such as "1m30s",
// states and overlap policies are names. Stores do not use it; each keeps
// its own encoding.

// In the wrappers below, a field of the outer struct hides the embedded
// field with the same JSON name.

type (
	jobFields     Job
	attemptFields Attempt
	schedFields   Schedule
)

type jobJSON struct {
	*jobFields
	Timeout jsondur.Duration `json:"timeout,omitempty"`
	Manual  bool             `json:"manual,omitempty"` // Job.Manual; read back from schedule and fire_time
}

type attemptJSON struct {
	*attemptFields
	Duration jsondur.Duration `json:"duration"`
	Backoff  jsondur.Duration `json:"backoff,omitempty"`
}

type schedJSON struct {
	*schedFields
	Timeout       jsondur.Duration `json:"timeout,omitempty"`
	CatchUpWindow jsondur.Duration `json:"catch_up_window,omitempty"`
	Jitter        jsondur.Duration `json:"jitter,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (j Job) MarshalJSON() ([]byte, error) {
	return json.Marshal(jobJSON{jobFields: (*jobFields)(&j), Timeout: jsondur.Duration(j.Timeout), Manual: j.Manual()})
}

// UnmarshalJSON implements json.Unmarshaler.
func (j *Job) UnmarshalJSON(b []byte) error {
	v := jobJSON{jobFields: (*jobFields)(j)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	j.Timeout = time.Duration(v.Timeout)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (a Attempt) MarshalJSON() ([]byte, error) {
	return json.Marshal(attemptJSON{attemptFields: (*attemptFields)(&a), Duration: jsondur.Duration(a.Duration), Backoff: jsondur.Duration(a.Backoff)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (a *Attempt) UnmarshalJSON(b []byte) error {
	v := attemptJSON{attemptFields: (*attemptFields)(a)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	a.Duration, a.Backoff = time.Duration(v.Duration), time.Duration(v.Backoff)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (s Schedule) MarshalJSON() ([]byte, error) {
	return json.Marshal(schedJSON{schedFields: (*schedFields)(&s), Timeout: jsondur.Duration(s.Timeout), CatchUpWindow: jsondur.Duration(s.CatchUpWindow),
		Jitter: jsondur.Duration(s.Jitter)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *Schedule) UnmarshalJSON(b []byte) error {
	v := schedJSON{schedFields: (*schedFields)(s)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	s.Timeout, s.CatchUpWindow, s.Jitter = time.Duration(v.Timeout), time.Duration(v.CatchUpWindow), time.Duration(v.Jitter)
	return nil
}

type retentionFields OutputRetention

type retentionJSON struct {
	*retentionFields
	MaxAge jsondur.Duration `json:"max_age,omitempty"`
}

// MarshalJSON implements json.Marshaler: max_age as a duration string.
func (r OutputRetention) MarshalJSON() ([]byte, error) {
	return json.Marshal(retentionJSON{retentionFields: (*retentionFields)(&r), MaxAge: jsondur.Duration(r.MaxAge)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *OutputRetention) UnmarshalJSON(b []byte) error {
	v := retentionJSON{retentionFields: (*retentionFields)(r)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	r.MaxAge = time.Duration(v.MaxAge)
	return nil
}
