package store

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hopperq/hopper/job"
)

// PackedOutput is an attempt's output (job.Output) as stores keep it: each
// stream gzip-compressed (nil when empty), with its size. The engine packs
// an attempt's output in its worker (PackOutput), so that compressing
// never holds a store's lock or writer; stores keep the bytes as they are
// and unpack them on reading (Unpack).
type PackedOutput struct {
	Stdout, Stderr, Log             []byte // gzip
	StdoutSize, StderrSize, LogSize int64  // bytes written, dropped ones included
}

// gzipWriters reuses compressors: a gzip.Writer holds about 800 KiB.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// compress gzips b (nil for empty b).
func compress(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	var buf bytes.Buffer
	w := gzipWriters.Get().(*gzip.Writer)
	w.Reset(&buf)
	w.Write(b) // a bytes.Buffer does not fail
	w.Close()
	gzipWriters.Put(w)
	return buf.Bytes()
}

// maxUnpacked bounds what one stored stream unpacks to: the largest cap a
// stream can have, with room to spare. A stream over it is corrupt.
const maxUnpacked = 64 << 20

// decompress reverses compress.
func decompress(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, nil
	}
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(r, maxUnpacked+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxUnpacked {
		return nil, fmt.Errorf("over %d bytes", maxUnpacked)
	}
	return out, nil
}

// PackOutput compresses o's streams; nil if o is nil or empty.
func PackOutput(o *job.Output) *PackedOutput {
	if o == nil || o.Empty() {
		return nil
	}
	return &PackedOutput{
		Stdout: compress(o.Stdout.Data), StdoutSize: max(o.Stdout.Size, int64(len(o.Stdout.Data))),
		Stderr: compress(o.Stderr.Data), StderrSize: max(o.Stderr.Size, int64(len(o.Stderr.Data))),
		Log: compress(o.Log.Data), LogSize: max(o.Log.Size, int64(len(o.Log.Data))),
	}
}

// Unpack returns the output p packed, of attempt att of job id; the
// caller fills the other fields. A stream that does not decompress is an
// error.
func (p *PackedOutput) Unpack(id job.ID, att int) (*job.Output, error) {
	o := &job.Output{ID: id, Attempt: att}
	for _, s := range []struct {
		to   *job.Stream
		data []byte
		size int64
		name string
	}{{&o.Stdout, p.Stdout, p.StdoutSize, "stdout"}, {&o.Stderr, p.Stderr, p.StderrSize, "stderr"}, {&o.Log, p.Log, p.LogSize, "log"}} {
		b, err := decompress(s.data)
		if err != nil {
			return nil, fmt.Errorf("job %d attempt %d: %s: %w", id, att, s.name, err)
		}
		*s.to = job.Stream{Data: b, Size: max(s.size, int64(len(b)))}
	}
	return o, nil
}

// OutputsParams are the arguments of Store.Outputs.
type OutputsParams struct {
	ID job.ID
	// Attempt, if positive, selects that attempt's output only.
	Attempt int
}

// PruneOutputsParams are the arguments of Store.PruneOutputs: the outputs
// of one schedule's runs to delete.
type PruneOutputsParams struct {
	Now      time.Time
	Schedule string
	// Keep is the schedule's retention, resolved (job.OutputRetention's
	// Resolved): the newest Keep.Succeeded outputs of attempts that
	// completed their job and the newest Keep.Failed of the others (by
	// finish time, then job ID and attempt) stay, unless older than
	// Keep.MaxAge (0: no age limit) before Now.
	Keep job.OutputRetention
}

// Validate returns a *job.FieldError unless p names a schedule and keeps
// a count of outputs that is not negative.
func (p PruneOutputsParams) Validate() error {
	switch {
	case p.Schedule == "":
		return job.Invalid("schedule", "must not be empty")
	case p.Keep.Succeeded < 0 || p.Keep.Failed < 0:
		return job.Invalid("keep", "counts must not be negative (resolve the retention first)")
	}
	return p.Keep.Check("keep")
}

// EncodeRetention returns a schedule's output retention as SQL stores keep
// it: JSON, or "" (NULL) for the defaults.
func EncodeRetention(r job.OutputRetention) string {
	if r == (job.OutputRetention{}) {
		return ""
	}
	b, _ := json.Marshal(r) // ints only: cannot fail
	return string(b)
}

// DecodeRetention reverses EncodeRetention (empty b: the defaults).
func DecodeRetention(b []byte) (job.OutputRetention, error) {
	var r job.OutputRetention
	if len(b) == 0 {
		return r, nil
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("output retention: %w", err)
	}
	return r, nil
}
