package cli

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCommandFor: the hints' command is the program as the user can run it
// again: its name only when PATH finds this very program, the path it was
// run by otherwise, and go run's command under go run (whose executable is
// gone once it exits).
func TestCommandFor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	installed := filepath.Join(dir, "bin", "hopper")
	other := filepath.Join(dir, "old", "hopper")
	spaced := filepath.Join(dir, "my tools", "hopper")
	link := filepath.Join(dir, "link", "hopper")
	for _, p := range []string{installed, other, spaced} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(installed, link); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(filepath.Join(repo, "cmd", "hopper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "cmd", "hopper", "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	goRunExe := filepath.Join(dir, "go-build123", "b001", "exe", "hopper")
	// path is what PATH finds ("" nothing); cwd the working directory,
	// which relative stats read from.
	for _, tc := range []struct {
		name, arg0, exe, path, cwd, want string
	}{
		{"on PATH", "hopper", installed, installed, dir, "hopper"},
		{"on PATH through a link", "hopper", installed, link, dir, "hopper"},
		{"run by its path, another hopper on PATH", "./bin/hopper", installed, other, dir, "./bin/hopper"},
		{"run by its path, none on PATH", installed, installed, "", dir, installed},
		{"a path with a space", spaced, spaced, "", dir, "'" + spaced + "'"},
		{"found in PATH as another file", "hopper", installed, other, dir, installed},
		{"go run in the repository", goRunExe, goRunExe, "", repo, "go run ./cmd/hopper"},
		{"go run elsewhere", goRunExe, goRunExe, "", dir, "go run example.com/x/cmd/hopper"},
		{"go run, a hopper on PATH", goRunExe, goRunExe, installed, repo, "go run ./cmd/hopper"},
	} {
		lookPath := func(name string) (string, error) {
			if tc.path == "" || name != "hopper" {
				return "", errors.New("not found")
			}
			return tc.path, nil
		}
		stat := func(p string) (os.FileInfo, error) {
			if !filepath.IsAbs(p) {
				p = filepath.Join(tc.cwd, p)
			}
			return os.Stat(p)
		}
		if got := commandFor(tc.arg0, tc.exe, "example.com/x/cmd/hopper", lookPath, stat); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
