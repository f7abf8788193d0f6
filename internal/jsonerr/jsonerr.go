// Package jsonerr describes why a JSON document did not decode in the
// document's own terms — its fields and JSON types — rather than in the Go
// types it was decoding into, for messages to people and to API clients
// written in other languages.
package jsonerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
)

// Describe returns the reason err, an error of encoding/json decoding a
// document, gives, in the document's terms: `"timeout": want a string,
// got number`, `want an object, got array`, `unknown field "x"`,
// `not valid JSON: …`.
func Describe(err error) string {
	field, reason := Explain(err)
	switch {
	case field == "":
		return reason
	case reason == unknownField:
		return fmt.Sprintf("%s %q", unknownField, field)
	}
	return fmt.Sprintf("%q: %s", field, reason)
}

const unknownField = "unknown field"

// Explain is Describe in two parts: the field err is about, a dotted path
// ("" for the document itself, or when encoding/json does not say), and
// the reason. An error it does not know comes back as its text, without
// encoding/json's "json: " prefix.
func Explain(err error) (field, reason string) {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var pe *time.ParseError
	switch {
	case errors.As(err, &te):
		what := te.Value
		if !strings.Contains(what, "(want ") { // a type's own error says what it wants
			what = "want " + kindOf(te.Type) + ", got " + what
		}
		return te.Field, what
	case errors.As(err, &se):
		return "", fmt.Sprintf("not valid JSON at byte %d: %s", se.Offset, se.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "", "not valid JSON: it ends before its value is complete"
	case errors.As(err, &pe):
		return "", fmt.Sprintf("want a time such as 2026-01-02T15:04:05Z (RFC 3339), got %q", pe.Value)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if name, ok := strings.CutPrefix(msg, `unknown field "`); ok {
		return strings.TrimSuffix(name, `"`), unknownField
	}
	return "", msg
}

// kindOf names the JSON values a Go type decodes from.
func kindOf(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == nil:
		return "another value"
	case t == reflect.TypeFor[time.Time]():
		return "a time such as 2026-01-02T15:04:05Z (RFC 3339)"
	case t == reflect.TypeFor[json.RawMessage]():
		return "a JSON value"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another value"
}

// ArgsError is the error of a job's args that do not decode into Type, the
// Go type of the kind's handler, for Reason (Describe's).
type ArgsError struct {
	Type   string
	Reason string
}

// Error names the type, for the Go programmer; Reason alone is in the
// args' own terms, for the person or program that wrote them.
func (e *ArgsError) Error() string { return "args do not fit " + e.Type + ": " + e.Reason }

// ArgsReason returns, for err or an error it wraps that is an *ArgsError,
// its Reason — what a person or a program in another language who wrote
// the args can act on — and otherwise def.
func ArgsReason(err error, def string) string {
	if ae := (*ArgsError)(nil); errors.As(err, &ae) {
		return ae.Reason
	}
	return def
}
