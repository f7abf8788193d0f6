package cli

import (
	"strings"
	"testing"
)

// TestChannelSecretsNotPrinted (docs/security.md): hopper channel add and
// list print a Slack URL without its token path and a webhook URL without
// its user information and query, as text and as JSON.
func TestChannelSecretsNotPrinted(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	secrets := []string{"SLACKTOKEN42", "hunter2", "QUERYTOKEN7"}
	outs := []result{
		hop(t, db, "channel", "add", "team", "--type", "slack", "--url", "https://hooks.slack.com/services/T0/B0/SLACKTOKEN42").ok(t),
		hop(t, db, "channel", "add", "hook", "--type", "webhook", "--url", "https://ops:hunter2@example.com/h?k=QUERYTOKEN7").ok(t),
		hop(t, db, "channel", "list").ok(t).has(t, "team", "hook", "hooks.slack.com", "example.com"),
		hop(t, db, "--json", "channel", "list").ok(t),
		hop(t, db, "--json", "channel", "add", "team", "--type", "slack", "--url", "https://hooks.slack.com/services/T0/B0/SLACKTOKEN42").ok(t),
	}
	for _, r := range outs {
		for _, s := range secrets {
			if strings.Contains(r.out, s) || strings.Contains(r.err, s) {
				t.Errorf("output shows %q:\n%s%s", s, r.out, r.err)
			}
		}
	}
}
