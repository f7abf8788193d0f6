package hopper

import (
	"runtime/debug"
	"testing"
)

// TestModuleVersion: a server's version is Hopper's module version, as the
// main module or a (replaced) dependency, else "devel".
func TestModuleVersion(t *testing.T) {
	t.Parallel()
	dep := func(path, version string, replace *debug.Module) *debug.Module {
		return &debug.Module{Path: path, Version: version, Replace: replace}
	}
	for _, c := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"main module", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v1.2.3"}}, "v1.2.3"},
		{"main module from its tree", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}}, "devel"},
		{"dependency", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{dep("example.com/other", "v9.9.9", nil), dep(modulePath, "v1.4.0", nil)}}, "v1.4.0"},
		{"replaced dependency", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{dep(modulePath, "v1.4.0", dep("example.com/fork", "v1.4.1-fork", nil))}}, "v1.4.1-fork"},
		{"replaced by a directory", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{dep(modulePath, "v1.4.0", dep("../hopper", "", nil))}}, "devel"},
		{"absent", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"}}, "devel"},
	} {
		if got := moduleVersion(&c.info); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
