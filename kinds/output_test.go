//go:build linux

package kinds

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/store/memstore"
)

// TestExecOutputKept: an exec job's stdout and stderr are kept with the
// attempt from their start, on success and on failure, up to the cap
// (1 MiB by default): a command writing more is truncated, the bytes
// dropped counted, and the truncation marked; the result keeps its tails.
func TestExecOutputKept(t *testing.T) {
	t.Parallel()
	ws := hopper.NewWorkers()
	Register(ws)
	c, err := hopper.NewClient(hopper.Config{Store: memstore.New(), Workers: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.StopNow() })
	ctx := context.Background()
	// 1.5 MiB of stdout: 98,304 lines of 16 bytes; a failure with stderr.
	big, err := c.Enqueue(ctx, KindExec, ExecArgs{Command: "sh", Args: []string{"-c",
		`yes 0123456789abcde | head -n 98304; echo '<script>alert(1)</script>' >&2`}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	failed, err := c.Enqueue(ctx, KindExec, ExecArgs{Command: "sh", Args: []string{"-c", "echo partial; echo broken >&2; exit 4"}},
		&hopper.EnqueueOptions{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunReady(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	o, err := c.Output(ctx, big.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Stdout.Data) != hopper.DefaultOutputLimit || o.Stdout.Size != 98304*16 || !o.Stdout.Truncated() {
		t.Errorf("stdout: kept %d of %d bytes (truncated %v), want %d of %d", len(o.Stdout.Data), o.Stdout.Size,
			o.Stdout.Truncated(), hopper.DefaultOutputLimit, 98304*16)
	}
	if !strings.HasPrefix(string(o.Stdout.Data), "0123456789abcde\n0123456789abcde\n") {
		t.Errorf("stdout: want its start kept, got %q…", o.Stdout.Data[:32])
	}
	if note := o.Stdout.TruncationNote(); !strings.Contains(note, "524288 more bytes not kept") {
		t.Errorf("truncation note: got %q", note)
	}
	if string(o.Stderr.Data) != "<script>alert(1)</script>\n" || o.Stderr.Truncated() || !o.Succeeded {
		t.Errorf("stderr: got %q (truncated %v), succeeded %v", o.Stderr.Data, o.Stderr.Truncated(), o.Succeeded)
	}
	j, _ := c.Get(ctx, big.ID)
	if !strings.Contains(string(j.Result), `"stdout_tail":"`) || len(j.Result) > 2*TailSize+200 {
		t.Errorf("result: %d bytes, want the tails only", len(j.Result))
	}
	o, err = c.Output(ctx, failed.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if string(o.Stdout.Data) != "partial\n" || string(o.Stderr.Data) != "broken\n" || o.Succeeded {
		t.Errorf("failed attempt: got stdout %q stderr %q succeeded %v", o.Stdout.Data, o.Stderr.Data, o.Succeeded)
	}
}
