//go:build linux

package kinds

import (
	"context"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/store/memstore"
)

// BenchmarkEnqueueExec measures what the exec policy adds to an Enqueue
// (into the memory store): nothing without an allow-list; with one, a PATH
// lookup for a command given as a name, and only a match for an absolute
// one.
func BenchmarkEnqueueExec(b *testing.B) {
	list := ExecPolicy{Allow: []string{"/usr/bin/*", "/bin/*"}}
	for _, bc := range []struct {
		name    string
		policy  ExecPolicy
		command string
	}{
		{"no-list", ExecPolicy{}, "echo"},
		{"list-name", list, "echo"},
		{"list-absolute", list, "/usr/bin/echo"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ws := hopper.NewWorkers()
			if err := RegisterWith(ws, Options{Exec: bc.policy}); err != nil {
				b.Fatal(err)
			}
			c, err := hopper.NewClient(hopper.Config{Store: memstore.New(), Workers: ws})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			args := ExecArgs{Command: bc.command, Args: []string{"hi"}}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Enqueue(ctx, KindExec, args, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
