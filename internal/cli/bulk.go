package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/kinds"
)

// bulkBatch is how many jobs one EnqueueMany call of --bulk carries.
const bulkBatch = 1000

// bulkLine is one line of enqueue --bulk.
type bulkLine struct {
	Kind         string          `json:"kind"`
	Args         json.RawMessage `json:"args"`
	Queue        string          `json:"queue"`
	Priority     int             `json:"priority"`
	Delay        kinds.Duration  `json:"delay"`
	RunAt        time.Time       `json:"run_at"`
	MaxAttempts  int             `json:"max_attempts"`
	Timeout      kinds.Duration  `json:"timeout"`
	UniqueKey    string          `json:"unique_key"`
	RetryBackoff string          `json:"retry_backoff"`
}

func (l *bulkLine) request() (hopper.EnqueueRequest, error) {
	if strings.TrimSpace(l.Kind) == "" {
		return hopper.EnqueueRequest{}, errors.New(`"kind" is missing`)
	}
	if err := kinds.ValidateArgs(l.Kind, l.Args); err != nil {
		return hopper.EnqueueRequest{}, err
	}
	retry, err := parseBackoff(l.RetryBackoff)
	if err != nil {
		return hopper.EnqueueRequest{}, fmt.Errorf("retry_backoff: %v", strings.TrimPrefix(err.Error(), "bad --retry-backoff "))
	}
	if l.Delay != 0 && !l.RunAt.IsZero() {
		return hopper.EnqueueRequest{}, errors.New(`give "delay" or "run_at", not both`)
	}
	var args any
	if len(l.Args) > 0 {
		args = l.Args
	}
	return hopper.EnqueueRequest{Kind: l.Kind, Args: args, Options: &hopper.EnqueueOptions{
		Queue: l.Queue, Priority: l.Priority, Delay: l.Delay.D(), RunAt: l.RunAt,
		MaxAttempts: l.MaxAttempts, Timeout: l.Timeout.D(), UniqueKey: l.UniqueKey, Retry: retry,
	}}, nil
}

var indexPrefix = regexp.MustCompile(`^\[(\d+)\]\.`)

// bulkEnqueue reads JSON lines from stdin and enqueues them in batches.
func (a *app) bulkEnqueue(ctx context.Context) error {
	return a.withSession(ctx, openOpts{create: true}, func(s *session) error {
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
					at := lines[0]
					if m := indexPrefix.FindStringSubmatch(fe.Field); m != nil {
						i, _ := strconv.Atoi(m[1])
						at = lines[min(i, len(lines)-1)]
						fe = &hopper.FieldError{Field: fe.Field[len(m[0]):], Reason: fe.Reason}
					}
					err = usagef("line %d: invalid job: %v", at, fe)
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
			var l bulkLine
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&l); err != nil {
				return usagef("line %d: %v (%d jobs enqueued before it)", ln, err, enqueued)
			}
			r, err := l.request()
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
