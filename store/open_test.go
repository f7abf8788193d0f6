package store

import "testing"

func TestRedacted(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://app:s3cret@db:5432/app?sslmode=require": "postgres://app:xxxxx@db:5432/app?sslmode=require",
		"postgres://app@db/app":                             "postgres://app@db/app",
		"sqlite:/var/lib/hopper.db":                         "sqlite:/var/lib/hopper.db",
		"/tmp/a b.db":                                       "/tmp/a b.db",
	} {
		if got := Redacted(in); got != want {
			t.Errorf("Redacted(%q) = %q, want %q", in, got, want)
		}
	}
}
