package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/jsonerr"
	"github.com/hopperq/hopper/internal/wire"
	"github.com/hopperq/hopper/kinds"
)

// bulkBatch is how many jobs one EnqueueMany call of --bulk carries.
const bulkBatch = 1000

// bulkRequest checks l, a line of enqueue --bulk (a job request, as the
// API's), and makes its request; ko are the built-in kinds' policies,
// external lists the kinds other than exec and http that may be enqueued.
func bulkRequest(l *wire.Job, ko kinds.Options, external []string) (hopper.EnqueueRequest, error) {
	switch {
	case strings.TrimSpace(l.Kind) == "":
	case l.Kind == kinds.KindExec || l.Kind == kinds.KindHTTP:
		if err := ko.ValidateArgs(l.Kind, l.Args); err != nil {
			return hopper.EnqueueRequest{}, err
		}
	case !slices.Contains(external, l.Kind):
		return hopper.EnqueueRequest{}, fmt.Errorf(`kind %q: hopper serve runs exec and http only; if other processes run %q, pass --external-kinds %s`, l.Kind, l.Kind, l.Kind)
	}
	return l.Request(time.Now())
}

// fieldText says what fe says in a document's terms: `"field": reason`.
func fieldText(fe *hopper.FieldError) string {
	reason := jsonerr.ArgsReason(fe, fe.Reason)
	if fe.Field == "" {
		return reason
	}
	return fmt.Sprintf("%q: %s", fe.Field, reason)
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
			debounced           int
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
					err = usagef("line %d: invalid job: %s", at, fieldText(fe))
				}
				return fmt.Errorf("%w (%d jobs enqueued before this batch)", err, enqueued)
			}
			for _, r := range res {
				switch {
				case r.Duplicate:
					dupes++
				case r.Debounced:
					debounced++
				default:
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
			var l wire.Job
			r, err := hopper.EnqueueRequest{}, wire.Decode(b, &l, "")
			if err == nil {
				r, err = bulkRequest(&l, ko, external)
			}
			if fe := (*hopper.FieldError)(nil); errors.As(err, &fe) {
				return usagef("line %d: %s (%d jobs enqueued before it)", ln, fieldText(fe), enqueued)
			} else if err != nil {
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
			fmt.Fprintf(a.Err, "hopper: %d %s not enqueued: %s unique key is held by a waiting or running job\n", dupes, plural(dupes, "job", "jobs"), plural(dupes, "its", "their"))
		}
		if debounced > 0 {
			fmt.Fprintf(a.Err, "hopper: %d %s debounced: merged into the job waiting with %s key\n", debounced, plural(debounced, "job", "jobs"), plural(debounced, "its", "their"))
		}
		if a.json {
			return printJSON(a.Out, map[string]int{"enqueued": enqueued, "duplicates": dupes, "debounced": debounced})
		}
		_, err := fmt.Fprintln(a.Out, enqueued)
		return err
	})
}
