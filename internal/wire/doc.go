// Package wire reads the documents the outside sends Hopper — a job
// request, a retry policy, a schedule request, a duration — once, for every
// edge that takes them: the HTTP API's bodies, the hopper command's flags
// and its enqueue --bulk lines, and the dashboard's forms. Each document is
// one Go type with its JSON form; its conversion to the library's
// hopper.EnqueueRequest or hopper.ScheduleOptions is one method.
//
// The rules an edge adds to the library's are written here only:
//
//   - a field left out is unset (the kind's, then the client's default
//     applies); a field given means what it says. A value the library would
//     read as "unset" — an empty queue or unique key, a zero timeout, a
//     zero max_attempts — is refused, naming the field and what leaving it
//     out gives (Given); where zero is a value, given it is that zero over
//     a kind's default: a priority of 0 (hopper.Priority(0)), a timeout of
//     0, no timeout (hopper.NoTimeout);
//
//   - a duration is a Go duration string or a number of seconds
//     (internal/jsondur); a time is RFC 3339;
//
//   - a retry policy is an object ({"strategy":"fixed","base":"5s"}) or its
//     compact string ("fixed:5s"), the form of --retry-backoff (ParseRetry).
//
//   - a run time is a delay from now or run_at, not both (the library
//     checks its Go callers' EnqueueOptions itself).
//
// Rules the library enforces for every caller (cron or every, every at
// least schedule.MinInterval, the zones, the limits of names, attempts and
// priorities, a retry policy's Validate) are left to it: its
// *hopper.FieldError names the field in these documents' terms, with its
// cause, and for a batch the item (InBatch, Index).
//
// The package is internal: the documents' public contract is their JSON,
// described in docs/api.md and openapi.json; see docs/decisions.md, "One
// home for the outside's documents".
package wire
