package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/jsonerr"
	"github.com/hopperq/hopper/kinds"
)

// bulkBatch is how many jobs one EnqueueMany call of --bulk carries.
const bulkBatch = 1000

// bulkLine is one line of enqueue --bulk. Pointers tell a field given as
// zero or empty, which is refused, from a field left out.
type bulkLine struct {
	Kind         string          `json:"kind"`
	Args         json.RawMessage `json:"args"`
	Queue        *string         `json:"queue"`
	Priority     int             `json:"priority"`
	Delay        *kinds.Duration `json:"delay"`
	RunAt        time.Time       `json:"run_at"`
	MaxAttempts  *int            `json:"max_attempts"`
	Timeout      *kinds.Duration `json:"timeout"`
	UniqueKey    string          `json:"unique_key"`
	RetryBackoff string          `json:"retry_backoff"`
}

// request checks l and makes its request; ko are the built-in kinds'
// policies, external lists the kinds other than exec and http that may be
// enqueued.
func (l *bulkLine) request(ko kinds.Options, external []string) (hopper.EnqueueRequest, error) {
	fail := func(format string, args ...any) (hopper.EnqueueRequest, error) {
		return hopper.EnqueueRequest{}, fmt.Errorf(format, args...)
	}
	switch {
	case strings.TrimSpace(l.Kind) == "":
		return fail(`"kind" is missing`)
	case l.Kind == kinds.KindExec || l.Kind == kinds.KindHTTP:
		if err := ko.ValidateArgs(l.Kind, l.Args); err != nil {
			return hopper.EnqueueRequest{}, err
		}
	case !slices.Contains(external, l.Kind):
		return fail(`kind %q: hopper serve runs exec and http only; if other processes run %q, pass --external-kinds %s`, l.Kind, l.Kind, l.Kind)
	}
	o := &hopper.EnqueueOptions{Priority: l.Priority, UniqueKey: l.UniqueKey}
	switch {
	case l.Queue != nil && strings.TrimSpace(*l.Queue) == "":
		return fail(`"queue": must not be empty (leave it out for the queue "default")`)
	case l.MaxAttempts != nil && *l.MaxAttempts < 1:
		return fail(`"max_attempts": must be at least 1, got %d (leave it out for the default, %d)`, *l.MaxAttempts, hopper.DefaultMaxAttempts)
	case l.Timeout != nil && *l.Timeout <= 0:
		return fail(`"timeout": must be positive, got %s (leave it out for no timeout)`, *l.Timeout)
	case l.Delay != nil && !l.RunAt.IsZero():
		return fail(`give "delay" or "run_at", not both`)
	}
	if l.Queue != nil {
		o.Queue = *l.Queue
	}
	if l.MaxAttempts != nil {
		o.MaxAttempts = *l.MaxAttempts
	}
	if l.Timeout != nil {
		o.Timeout = l.Timeout.D()
	}
	if l.Delay != nil {
		t, err := delayTime(`"delay"`, l.Delay.D())
		if err != nil {
			return hopper.EnqueueRequest{}, errors.Unwrap(err)
		}
		if *l.Delay > 0 {
			o.RunAt = t
		}
	}
	if !l.RunAt.IsZero() {
		if err := checkRunAt(`"run_at"`, l.RunAt.Format(time.RFC3339), l.RunAt); err != nil {
			return hopper.EnqueueRequest{}, errors.Unwrap(err)
		}
		o.RunAt = l.RunAt
	}
	retry, err := parseBackoff(l.RetryBackoff)
	if err != nil {
		return fail(`"retry_backoff": %v`, strings.TrimPrefix(err.Error(), "bad --retry-backoff "))
	}
	o.Retry = retry
	var args any
	if len(l.Args) > 0 {
		args = l.Args // kept byte for byte
	}
	return hopper.EnqueueRequest{Kind: l.Kind, Args: args, Options: o}, nil
}

// bulkEnqueue reads JSON lines from stdin and enqueues them in batches.
func (a *app) bulkEnqueue(ctx context.Context, external []string) error {
	ko, err := envOptions()
	if err != nil {
		return err
	}
	o := openOpts{access: create, config: func(c *hopper.Config) { c.ExternalKinds = external }, kinds: &ko}
	return a.withSession(ctx, o, func(s *session) error {
		sc := bufio.NewScanner(a.In)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		progress := isTerminal(a.Err)
		var (
			reqs                []hopper.EnqueueRequest
			lines               []int
			enqueued, dupes, ln int
		)
		flush := func() error {
			if len(reqs) == 0 {
				return nil
			}
			res, err := s.EnqueueMany(ctx, reqs)
			if err != nil {
				var fe *hopper.FieldError
				if errors.As(err, &fe) {
					at := lines[min(fe.Index, len(lines)-1)] // a batch of one is not indexed: 0
					err = usagef("line %d: invalid job: %s: %s", at, fe.Field, jsonerr.ArgsReason(fe, fe.Reason))
				}
				return fmt.Errorf("%w (%d jobs enqueued before this batch)", err, enqueued)
			}
			for _, r := range res {
				if r.Duplicate {
					dupes++
				} else {
					enqueued++
				}
			}
			reqs, lines = reqs[:0], lines[:0]
			if progress {
				fmt.Fprintf(a.Err, "\renqueued %d jobs…", enqueued)
			}
			return nil
		}
		for sc.Scan() {
			ln++
			b := bytes.TrimSpace(sc.Bytes())
			if len(b) == 0 {
				continue
			}
			if !utf8.Valid(b) {
				// JSON decoding would replace the bad bytes: refuse
				// rather than enqueue something else than was written.
				return usagef("line %d: not valid UTF-8 (%d jobs enqueued before it)", ln, enqueued)
			}
			var l bulkLine
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&l); err != nil {
				reason := jsonerr.Describe(err)
				if errors.As(err, new(*time.ParseError)) {
					reason = `"run_at": ` + reason // the line's only time
				}
				return usagef("line %d: %s (%d jobs enqueued before it)", ln, reason, enqueued)
			}
			r, err := l.request(ko, external)
			if err != nil {
				return usagef("line %d: %v (%d jobs enqueued before it)", ln, err, enqueued)
			}
			reqs, lines = append(reqs, r), append(lines, ln)
			if len(reqs) == bulkBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("reading stdin after line %d: %w (%d jobs enqueued)", ln, err, enqueued)
		}
		if err := flush(); err != nil {
			return err
		}
		if progress {
			fmt.Fprint(a.Err, "\r\033[K")
		}
		if dupes > 0 {
			fmt.Fprintf(a.Err, "hopper: %d jobs not enqueued: their unique key is held by a waiting or running job\n", dupes)
		}
		if a.json {
			return printJSON(a.Out, map[string]int{"enqueued": enqueued, "duplicates": dupes})
		}
		_, err := fmt.Fprintln(a.Out, enqueued)
		return err
	})
}
