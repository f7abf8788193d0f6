package kinds

import (
	"cmp"
	"context"
	"crypto/hmac"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// channelMap is a ChannelSource of fixed channels.
type channelMap map[string]*hopper.Channel

func (m channelMap) Channel(_ context.Context, name string) (*hopper.Channel, error) {
	if ch := m[name]; ch != nil {
		return ch.Clone(), nil
	}
	return nil, hopper.ErrNotFound
}

// hit is a request a test server got.
type hit struct {
	method, path, body, signature, timestamp string
}

// recorder is a test server on loopback that records its requests and
// answers each path as routes says (none: 200).
func recorder(t *testing.T, routes func(w http.ResponseWriter, r *http.Request) bool) (*httptest.Server, func() []hit) {
	t.Helper()
	var mu sync.Mutex
	var hits []hit
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		hits = append(hits, hit{r.Method, r.URL.Path, string(b), r.Header.Get(SignatureHeader), r.Header.Get(TimestampHeader)})
		mu.Unlock()
		if routes == nil || !routes(w, r) {
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []hit {
		mu.Lock()
		defer mu.Unlock()
		return append([]hit(nil), hits...)
	}
}

// TestNotifyRedirects: webhook and Slack notifications follow only 307
// and 308 redirects to their channel's own host, each under the outbound
// policy, and fail permanently otherwise, without reaching the other host;
// their errors never show the channel's secret path or query, nor a
// redirect's; a name that resolves to a refused address is refused when
// connecting (DNS rebinding).
func TestNotifyRedirects(t *testing.T) {
	t.Parallel()
	const secret, token = "hmac-key-0123456789", "SLACKTOKEN0123456789"
	other, otherHits := recorder(t, nil)
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) // another host name, allowed if it were followed
	var hook *httptest.Server
	hook, hookHits := recorder(t, func(w http.ResponseWriter, r *http.Request) bool {
		to := map[string]string{
			"/same307": "/final", "/same308": "/final", "/302": "/final", "/301": "/final", "/303": "/final",
			"/meta":  "http://169.254.169.254/latest/meta-data/" + token,
			"/other": otherURL + "/stolen?token=" + token,
			"/down":  strings.Replace(hook.URL, "http:", "https:", 1) + "/final",
			"/loop":  "/loop",
		}[r.URL.Path]
		code := map[string]int{"/same308": 308, "/302": 302, "/301": 301, "/303": 303}[r.URL.Path]
		switch {
		case strings.HasPrefix(r.URL.Path, "/services/"):
			http.Error(w, "no_service", http.StatusInternalServerError)
		case to != "":
			http.Redirect(w, r, to, cmp.Or(code, http.StatusTemporaryRedirect))
		default:
			return false
		}
		return true
	})
	chans := channelMap{}
	allow := &notifier{src: chans, now: time.Now}
	var err error
	if allow.http, err = NewHTTPRunner(HTTPPolicy{Allow: []string{"127.0.0.1/32"}}); err != nil {
		t.Fatal(err)
	}
	strict := &notifier{src: chans, now: time.Now}
	if strict.http, err = NewHTTPRunner(HTTPPolicy{}); err != nil {
		t.Fatal(err)
	}
	send := func(n *notifier, ch *hopper.Channel) error {
		chans[ch.Name] = ch
		_, err := n.deliver(t.Context(), hopper.NotifyArgs{Channel: ch.Name, Notification: hopper.Notification{Event: "test", Status: job.StatusEvent, At: time.Now()}})
		return err
	}
	for _, c := range []struct {
		name, path string
		want       string // "" delivered to /final
	}{
		{"307 same host", "/same307", ""},
		{"308 same host", "/same308", ""},
		{"302", "/302", "a 302 redirect is not followed"},
		{"301", "/301", "a 301 redirect is not followed"},
		{"303", "/303", "a 303 redirect is not followed"},
		{"metadata", "/meta", "169.254.169.254 is"},
		{"other host", "/other", "another host than the channel's 127.0.0.1"},
		{"https to http", "/down", ""}, // first http, so an upgrade: refused only the other way
		{"loop", "/loop", "stopped after 5 redirects"},
	} {
		before := len(hookHits())
		err := send(allow, &hopper.Channel{Name: "hook", Type: job.ChannelWebhook, URL: hook.URL + c.path + "?key=" + token, Secret: secret})
		got := hookHits()[before:]
		if c.want == "" && c.path != "/down" {
			last := got[len(got)-1]
			ts, _ := strconv.ParseInt(last.timestamp, 10, 64)
			if err != nil || last.path != "/final" || last.method != "POST" || !strings.Contains(last.body, `"event":"test"`) ||
				!hmac.Equal([]byte(last.signature), []byte(Sign(secret, ts, []byte(last.body)))) {
				t.Errorf("%s: %v; last request %+v, want the signed notification POSTed to /final", c.name, err, last)
			}
			continue
		}
		if c.path == "/down" {
			// An http URL redirected to https on its host is followed (the
			// test server speaks no TLS: a connection error, not a refusal).
			if err == nil || hopper.IsPermanent(err) {
				t.Errorf("%s: %v, want a temporary connection error", c.name, err)
			}
		} else if err == nil || !hopper.IsPermanent(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a permanent error saying %q", c.name, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "meta-data") || strings.Contains(err.Error(), "stolen")) {
			t.Errorf("%s: the error shows a secret URL: %v", c.name, err)
		}
		for _, h := range got {
			if h.path == "/final" {
				t.Errorf("%s: the redirect was followed: %+v", c.name, h)
			}
		}
	}
	if h := otherHits(); len(h) > 0 {
		t.Errorf("the other host was reached: %+v", h)
	}
	// https never to http: the first hop is checked by the redirect policy
	// before any connection.
	req := httptest.NewRequest("POST", "http://127.0.0.1/final", nil)
	req.Response = &http.Response{StatusCode: http.StatusTemporaryRedirect}
	via := []*http.Request{httptest.NewRequest("POST", "https://127.0.0.1/hook", nil)}
	if err := allow.http.notifyRedirect(req, via); err == nil || !strings.Contains(err.Error(), "from https to http") {
		t.Errorf("https to http: %v, want refused", err)
	}

	// A Slack channel's path is its token: its errors show the host only.
	err = send(allow, &hopper.Channel{Name: "slack", Type: job.ChannelSlack, URL: hook.URL + "/services/T0/B0/" + token})
	if err == nil || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "500") {
		t.Errorf("slack answering 500: %v, want the status without the URL's path", err)
	}
	// DNS: a name resolving to a refused address is refused at the
	// connection, whatever the URL says, and the request never sent.
	before := len(hookHits())
	err = send(strict, &hopper.Channel{Name: "hook", Type: job.ChannelWebhook, URL: strings.Replace(hook.URL, "127.0.0.1", "localhost", 1) + "/same307?key=" + token})
	if err == nil || !hopper.IsPermanent(err) || !strings.Contains(err.Error(), "localhost resolves to") || strings.Contains(err.Error(), token) {
		t.Errorf("webhook to localhost under the default policy: %v, want refused at the connection, no token shown", err)
	}
	if n := len(hookHits()) - before; n != 0 {
		t.Errorf("the refused name got %d requests", n)
	}
}
