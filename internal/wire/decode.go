package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/hopperq/hopper/internal/jsonerr"
	"github.com/hopperq/hopper/job"
)

// errTrailing is a document holding more than one JSON value.
var errTrailing = errors.New("more than one JSON value")

// Decode decodes b, one JSON value, into v, a document of this package (or
// any struct), refusing unknown fields and trailing data. The error is a
// *job.FieldError naming the field after prefix ("retry.", "" for a
// document of its own) in the document's terms (jsonerr.Explain), the
// decoding error its Err; a fault of the whole value names prefix's value
// ("retry"), or no field for a document of its own.
func Decode(b []byte, v any, prefix string) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return &job.FieldError{Field: whole(prefix), Reason: "empty: want a JSON object"}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			return &job.FieldError{Field: whole(prefix), Reason: errTrailing.Error(), Err: errTrailing}
		}
		return nil
	}
	field, reason := jsonerr.Explain(err)
	field = strings.ReplaceAll(field, "Options.", "") // an embedded struct's name is no field
	if field == "" {
		return &job.FieldError{Field: whole(prefix), Reason: reason, Err: err}
	}
	return &job.FieldError{Field: prefix + field, Reason: reason, Err: err}
}

// whole names the value prefix is the prefix of: "retry" for "retry.".
func whole(prefix string) string { return strings.TrimSuffix(prefix, ".") }
