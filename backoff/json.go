package backoff

import (
	"encoding/json"
	"time"

	"github.com/hopperq/hopper/internal/jsondur"
)

// A Policy's JSON form, as the hopper command prints it and the HTTP API
// takes it, writes durations as strings ("1s", "1h0m0s") and also reads
// numbers of seconds (internal/jsondur). Stores keep policies in encodings of their own.

type policyFields Policy

type policyJSON struct {
	*policyFields
	Base   jsondur.Duration   `json:"base,omitempty"`
	Max    jsondur.Duration   `json:"max,omitempty"`
	Delays []jsondur.Duration `json:"delays,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (p Policy) MarshalJSON() ([]byte, error) {
	v := policyJSON{policyFields: (*policyFields)(&p), Base: jsondur.Duration(p.Base), Max: jsondur.Duration(p.Max)}
	for _, d := range p.Delays {
		v.Delays = append(v.Delays, jsondur.Duration(d))
	}
	return json.Marshal(v)
}

// UnmarshalJSON implements json.Unmarshaler.
func (p *Policy) UnmarshalJSON(b []byte) error {
	v := policyJSON{policyFields: (*policyFields)(p)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	p.Base, p.Max, p.Delays = time.Duration(v.Base), time.Duration(v.Max), nil
	for _, d := range v.Delays {
		p.Delays = append(p.Delays, time.Duration(d))
	}
	return nil
}
