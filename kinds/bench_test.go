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

// BenchmarkEnqueueHTTP measures what the http policy adds to an Enqueue
// (into the memory store): the URL parsed once more, and its host read as
// an address, against the same kind registered without a policy.
func BenchmarkEnqueueHTTP(b *testing.B) {
	for _, bc := range []struct {
		name, url string
		policy    bool
	}{
		{"no-policy", "https://hooks.example.com/notify?x=1", false},
		{"policy-name", "https://hooks.example.com/notify?x=1", true},
		{"policy-address", "https://203.0.113.7/notify?x=1", true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ws := hopper.NewWorkers()
			if bc.policy {
				if err := RegisterWith(ws, Options{Kinds: []string{KindHTTP}}); err != nil {
					b.Fatal(err)
				}
			} else {
				hopper.Register(ws, KindHTTP, func(ctx context.Context, a HTTPArgs) (any, error) { return nil, nil }, nil)
			}
			c, err := hopper.NewClient(hopper.Config{Store: memstore.New(), Workers: ws})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			args := HTTPArgs{URL: bc.url, Method: "POST", Body: "{}"}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Enqueue(ctx, KindHTTP, args, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
