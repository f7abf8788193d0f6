package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEQuotesThisExample: the README's quick start quotes this file's
// calls as they are (it left out the schedule's Replace: true, without
// which a second run fails).
func TestREADMEQuotesThisExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []*regexp.Regexp{
		regexp.MustCompile(`(?s)AddSchedule\(ctx, "nightly-report", hopper\.ScheduleOptions\{(.*?)\}`),
		regexp.MustCompile(`(?s)client\.Enqueue\(ctx, "send_email",(.*?)\)\n`),
	} {
		r, s := call.FindSubmatch(readme), call.FindSubmatch(self)
		if r == nil || s == nil {
			t.Fatalf("%s: in README %v, in main.go %v", call, r != nil, s != nil)
		}
		if got, want := squeeze(string(r[1])), squeeze(string(s[1])); got != want {
			t.Errorf("README quotes %s as\n%s\nmain.go has\n%s", call, got, want)
		}
	}
}

// squeeze drops white space and trailing commas, the layout the two may
// differ in.
func squeeze(s string) string {
	s = strings.Join(strings.Fields(s), "")
	return strings.TrimSuffix(s, ",")
}
