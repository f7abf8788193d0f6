package httpapi

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper"
)

// outputView is the JSON of an attempt's output (GET /jobs/{id}/output):
// each stream as text.
type outputView struct {
	ID         hopper.ID  `json:"id"`
	Attempt    int        `json:"attempt"`
	Schedule   string     `json:"schedule,omitempty"`
	Succeeded  bool       `json:"succeeded"`
	FinishedAt time.Time  `json:"finished_at"`
	Stdout     streamView `json:"stdout"`
	Stderr     streamView `json:"stderr"`
	Log        streamView `json:"log"`
}

// streamView is one stream of an outputView: the bytes kept as text (each
// run of bytes that are not UTF-8 replaced by U+FFFD; ?stream= gives them
// as written), how many were written, and whether some were dropped.
type streamView struct {
	Text      string `json:"text"`
	Size      int64  `json:"size"`
	Kept      int    `json:"kept"`
	Truncated bool   `json:"truncated"`
}

func newStreamView(s hopper.Stream) streamView {
	return streamView{Text: strings.ToValidUTF8(string(s.Data), "\uFFFD"), Size: s.Size, Kept: len(s.Data), Truncated: s.Truncated()}
}

// output serves GET /jobs/{id}/output: the output of the job's latest
// attempt that wrote any, or of ?attempt=N, as JSON; with ?stream=stdout,
// stderr or log, that stream's bytes as written (text/plain), with its
// size and truncation in headers.
func (a *api) output(w http.ResponseWriter, r *http.Request) error {
	id, err := jobID(r)
	if err != nil {
		return err
	}
	q, err := parseQuery(r)
	if err != nil {
		return err
	}
	att64, _, err := q.number("attempt", 1, math.MaxInt, func(s string) string {
		return fmt.Sprintf("%q: want an attempt number from 1", s)
	})
	if err != nil {
		return err
	}
	att := int(att64)
	stream, err := q.one("stream")
	if err != nil {
		return err
	}
	if stream != "" {
		if _, err := (&hopper.Output{}).Stream(stream); err != nil {
			return invalid("stream", fmt.Sprintf("%q: want stdout, stderr or log", stream))
		}
	}
	o, err := a.c.Output(r.Context(), id, att)
	if errors.Is(err, hopper.ErrNotFound) {
		if _, gerr := a.c.Get(r.Context(), id); gerr != nil {
			return notFound(gerr, id)
		}
		msg := fmt.Sprintf("job %d: no attempt kept any output", id)
		if att > 0 {
			msg = fmt.Sprintf("job %d: attempt %d kept no output (it wrote nothing, has not ended, or its output was pruned)", id, att)
		}
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Field: "attempt", Message: msg}
	}
	if err != nil {
		return err
	}
	if stream == "" {
		reply(w, http.StatusOK, outputView{ID: o.ID, Attempt: o.Attempt, Schedule: o.Schedule, Succeeded: o.Succeeded,
			FinishedAt: o.FinishedAt, Stdout: newStreamView(o.Stdout), Stderr: newStreamView(o.Stderr), Log: newStreamView(o.Log)})
		return nil
	}
	s, _ := o.Stream(stream)
	h := w.Header()
	// Untrusted text: never sniffed into HTML, never rendered inline as a
	// page of this origin.
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Hopper-Attempt", strconv.Itoa(o.Attempt))
	h.Set("Hopper-Stream-Size", strconv.FormatInt(s.Size, 10))
	h.Set("Hopper-Stream-Truncated", strconv.FormatBool(s.Truncated()))
	w.WriteHeader(http.StatusOK)
	w.Write(s.Data)
	return nil
}
