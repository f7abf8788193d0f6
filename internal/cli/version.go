package cli

import (
	"runtime/debug"
	"strings"
)

// version is the release version, set when building a release:
//
//	go build -ldflags "-X github.com/hopperq/hopper/internal/cli.version=v1.2.3" ./cmd/hopper
//
// Empty, hopper --version reports what the Go toolchain recorded: the
// module's version (go install …@v1.2.3) or the VCS revision and time.
var version string

// versionText is what hopper --version prints after "hopper ".
func versionText() string {
	info, ok := debug.ReadBuildInfo()
	return versionString(version, info, ok)
}

// versionString describes a build: the version set by -ldflags, else the
// main module's version, else the VCS revision (12 hex digits, "+dirty" if
// the tree was modified) and its time, else "devel"; then the Go version.
func versionString(set string, info *debug.BuildInfo, ok bool) string {
	goVersion := "unknown Go version"
	v := set
	if ok && info != nil {
		goVersion = info.GoVersion
		if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		if v == "" {
			var rev, at string
			dirty := false
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.time":
					at = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
			if rev != "" {
				v = "devel " + rev[:min(12, len(rev))]
				if dirty {
					v += "+dirty"
				}
				if at != "" {
					v += " " + at
				}
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	return strings.TrimSpace(v) + " (" + goVersion + ")"
}
