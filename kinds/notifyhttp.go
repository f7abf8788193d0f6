package kinds

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// Webhook and Slack notifications are requests of the http kind's
// runner, under its outbound policy (every connection's address checked
// by the dialer after DNS, each redirect's URL before it is followed),
// with two differences, because a channel's URL is a secret (a Slack
// URL's path is its token, a webhook's query often holds one) where an
// http job's URL is args every read token sees:
//
//   - Their messages, stored in the job and logged, name the channel's
//     URL redacted (job.Channel.Redacted) and other URLs by their origin
//     only (scheme and host).
//   - They follow only 307 and 308 redirects, which send the POST again
//     with its body, and only to the channel's own host (an https URL
//     never to http): a redirect to another host would hand it the
//     signed notification and, in the Referer header, the channel's URL;
//     a 301, 302 or 303 would turn the POST into a GET without the
//     notification. Any other redirect fails the delivery permanently,
//     naming the status and the target's origin.

// deliverHTTP sends a webhook or Slack notification of channel ch: a to
// ch.URL.
func (r *HTTPRunner) deliverHTTP(ctx context.Context, ch *job.Channel, a HTTPArgs) (any, error) {
	shown := ch.Redacted().URL
	if err := r.Check(a); err != nil {
		var re *RefusedAddrError
		if !errors.As(err, &re) {
			// Its message may quote the URL: not shown.
			return nil, hopper.Permanent(fmt.Errorf("notify: channel %q: its URL %s is not one the http kind may call: "+
				"an http or https URL whose host is a name, or an address in its usual form", ch.Name, shown))
		}
		return nil, hopper.Permanent(fmt.Errorf("notify: channel %q: http %s %s: %w", ch.Name, a.Method, shown, re))
	}
	res, err := r.do(ctx, a, r.notify, shown, originOf)
	if err == nil && res.Status >= 300 && res.Status < 400 {
		// A redirect not followed (HTTPPolicy.MaxRedirects < 0): the
		// notification was not delivered.
		err = hopper.Permanent(fmt.Errorf("http %s %s: answered %d, a redirect, which notifications do not follow here: give the channel its final URL", a.Method, shown, res.Status))
	}
	return result(res, err)
}

// notifyRedirect is the redirect policy of notifications: the http
// kind's first (followRedirect: the count, the scheme, the address of an
// IP literal, so that a redirect to a refused address says so), then
// their own (see above).
func (r *HTTPRunner) notifyRedirect(req *http.Request, via []*http.Request) error {
	first, to := via[0].URL, originOf(req.URL.String())
	if err := r.followRedirect(req, via, to); err != nil {
		return err
	}
	code := 0
	if req.Response != nil {
		code = req.Response.StatusCode
	}
	switch {
	case code != http.StatusTemporaryRedirect && code != http.StatusPermanentRedirect:
		return &redirectError{to, fmt.Errorf("a %d redirect is not followed by notifications (it would send a GET without the notification): give the channel its final URL", code)}
	case normHost(req.URL.Hostname()) != normHost(first.Hostname()):
		return &redirectError{to, fmt.Errorf("another host than the channel's %s: notifications follow redirects to their own host only (the channel's URL is a secret)", first.Hostname())}
	case first.Scheme == "https" && req.URL.Scheme != "https":
		return &redirectError{to, fmt.Errorf("from https to %s: not followed", req.URL.Scheme)}
	}
	return nil
}

// originOf returns the scheme and host of the URL s (its user
// information, path and query left out), or "(an invalid URL)".
func originOf(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "(an invalid URL)"
	}
	return u.Scheme + "://" + u.Host
}
