// Package hoppertest holds assertions and a worker harness for the tests
// of programs that use Hopper, so that they need not write their own over
// Client.List.
//
// The assertions look at the jobs a client's store holds — the memory
// store of hopper.NewClient or any store opened by URL with hopper.Open —
// and fail the test with a message that lists what was found:
//
//   - RequireEnqueued: exactly one job matches an Expect (kind, args as
//     JSON, queue, priority, attempts, unique key, state, run-at);
//   - RequireManyEnqueued: the jobs of the kinds expected are those
//     expected, in enqueue order;
//   - RequireNotEnqueued: no job matches.
//
// Worker runs one job through a kind's registered handler synchronously,
// under an explicit now (the step API, hopper.Client.ProcessNext), and
// returns the job as its attempt left it: completed with its result,
// retrying with its error and next run-at, dead, or snoozed.
//
// The functions use only Helper, Fatalf and Errorf of their testing.TB.
package hoppertest
