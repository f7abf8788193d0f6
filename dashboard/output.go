package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hopperq/hopper"
)

// outputPreview bounds the bytes of a stream shown on the job page (its
// first ones); the full stream is a link away (outputPage).
const outputPreview = 64 << 10

// outputView is what an attempt kept of its output, for the job page.
type outputView struct {
	Streams []streamView // those written to, in the order stdout, stderr, log
}

// streamView is one stream on the job page: a preview of its text, and
// the link to it in full.
type streamView struct {
	Name string
	Text string // the kept bytes' first outputPreview, as text
	// Note says what the page leaves out: the bytes past the preview, or
	// those the stream's cap dropped; empty if nothing.
	Note string
	URL  string // the stream in full, as text/plain
}

// newOutputView returns the view of o, an output of job id; nil if o
// wrote nothing.
func (h *handler) newOutputView(id hopper.ID, o *hopper.Output) *outputView {
	v := &outputView{}
	for _, name := range []string{"stdout", "stderr", "log"} {
		s, _ := o.Stream(name)
		if s.Empty() {
			continue
		}
		sv := streamView{Name: name, URL: h.url(fmt.Sprintf("/jobs/%d/output?attempt=%d&stream=%s", id, o.Attempt, name))}
		data := s.Data
		var notes []string
		if len(data) > outputPreview {
			cut := outputPreview
			for cut > 0 && !utf8.RuneStart(data[cut]) {
				cut--
			}
			data = data[:cut]
			notes = append(notes, fmt.Sprintf("first %d of %d bytes kept shown", len(data), len(s.Data)))
		}
		if s.Truncated() {
			notes = append(notes, fmt.Sprintf("%d more bytes written were not kept (the cap is %d)", s.Dropped(), len(s.Data)))
		}
		sv.Text = strings.ToValidUTF8(string(data), "\uFFFD")
		sv.Note = strings.Join(notes, "; ")
		v.Streams = append(v.Streams, sv)
	}
	if len(v.Streams) == 0 {
		return nil
	}
	return v
}

// outputPage serves one stream of an attempt's output in full, as
// text/plain: untrusted text that the browser must never read as a page
// of the dashboard's origin (nosniff, a sandboxing CSP).
func (h *handler) outputPage(w http.ResponseWriter, r *http.Request) {
	id, ok := h.jobID(w, r)
	if !ok {
		return
	}
	att, err := strconv.Atoi(r.URL.Query().Get("attempt"))
	if err != nil || att < 1 {
		h.fail(w, r, http.StatusBadRequest, "Give the attempt: ?attempt=N, from 1.")
		return
	}
	name := r.URL.Query().Get("stream")
	o, err := h.c.Output(r.Context(), id, att)
	if errors.Is(err, hopper.ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, "No such output.")
		return
	}
	if err != nil {
		h.storeFailed(w, r, err)
		return
	}
	s, err := o.Stream(name)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, "Give the stream: ?stream=stdout, stderr or log.")
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/plain; charset=utf-8")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	w.WriteHeader(http.StatusOK)
	w.Write(s.Data)
	if note := s.TruncationNote(); note != "" {
		fmt.Fprintf(w, "\n%s\n", note)
	}
}
