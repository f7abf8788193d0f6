package kinds

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hopperq/hopper"
)

// DefaultHTTPMaxRedirects is how many redirects an http job follows when
// its policy's MaxRedirects is zero.
const DefaultHTTPMaxRedirects = 5

// HTTPPolicy is where http jobs may connect. The zero value is the default
// policy, the safe one:
//
//   - Connections to the addresses of the server itself and of private
//     networks are refused: loopback, link-local (with cloud metadata
//     services), private (RFC 1918), shared (100.64.0.0/10), unique-local,
//     multicast, unspecified, broadcast and reserved addresses, and the IPv6
//     forms that carry such an IPv4 address (IPv4-mapped, -compatible and
//     -translated, NAT64, 6to4, Teredo). docs/security.md lists each range.
//   - The address is checked when the connection is made, after the host
//     name was resolved, on the address really connected to, so a name
//     that resolves to a refused address (or starts to, between a check
//     and the connection: DNS rebinding) is refused too. Every redirect's
//     connection is checked the same way.
//   - At most DefaultHTTPMaxRedirects redirects are followed, to http or
//     https URLs only.
//   - HTTP_PROXY, HTTPS_PROXY and NO_PROXY are ignored.
//
// A URL whose host is an IP address the policy refuses is refused before
// any connection: at Enqueue and AddSchedule by a client that registered
// the kinds under this policy, and when the job runs. A refused job fails
// permanently with a *RefusedAddrError naming the address, why it is
// refused and how to allow it.
type HTTPPolicy struct {
	// Allow opens what the default refuses. Each entry is one of:
	//
	//   - a CIDR prefix ("10.1.0.0/16", "fd00:1::/64") or a single IP
	//     address ("127.0.0.2"): connections to addresses in it are allowed
	//     (an IPv6 address carrying an IPv4 one is allowed if either is);
	//   - a host name ("hooks.internal"): connections made for a URL with
	//     exactly this host (or for a proxy of this name) are not checked
	//     at all, whatever the name resolves to, now or later. Whoever
	//     controls the name's DNS then decides where jobs may connect;
	//     prefer addresses unless the name's addresses change.
	//
	// A host name is matched without regard to case or a final dot; an
	// internationalised name must be written in its xn-- form.
	Allow []string
	// ProxyFromEnvironment sends requests through the proxy named by the
	// environment's HTTP_PROXY, HTTPS_PROXY and NO_PROXY, as
	// http.ProxyFromEnvironment reads them (once per process). The
	// connection to the proxy is checked like any other, so a proxy on a
	// refused address must be allowed. Where the proxy then connects is
	// the proxy's decision: only a URL's IP-literal host is still checked.
	// False (the default): the variables are ignored.
	ProxyFromEnvironment bool
	// MaxRedirects is how many redirects a request follows; beyond it the
	// job fails permanently. 0: DefaultHTTPMaxRedirects. Negative: none is
	// followed, and a 3xx response completes the job.
	MaxRedirects int
}

// Validate reports what is wrong with p, if anything: an entry of Allow
// that is neither a CIDR prefix, an IP address nor a host name.
func (p HTTPPolicy) Validate() error {
	_, err := p.allowed()
	return err
}

// httpAllowed is what a policy allows beyond the default (HTTPPolicy.Allow,
// read), with the checks that need nothing more: those made before any
// connection, and the address check of each connection.
type httpAllowed struct {
	prefixes []netip.Prefix
	hosts    map[string]bool // lower case, without a final dot
}

// allowed reads p.Allow.
func (p HTTPPolicy) allowed() (httpAllowed, error) {
	al := httpAllowed{hosts: make(map[string]bool)}
	for _, s := range p.Allow {
		prefix, host, err := parseAllow(s)
		if err != nil {
			return httpAllowed{}, fmt.Errorf("allow entry %q: %v", s, err)
		}
		if host != "" {
			al.hosts[host] = true
		} else {
			al.prefixes = append(al.prefixes, prefix)
		}
	}
	return al, nil
}

// parseAllow reads one entry of HTTPPolicy.Allow: a prefix, or a host name
// (normalised by normHost).
func parseAllow(s string) (netip.Prefix, string, error) {
	if strings.Contains(s, "://") {
		return netip.Prefix{}, "", errors.New("a URL; give its host name or address alone")
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, "", fmt.Errorf("not a CIDR prefix: %v", err)
		}
		return p.Masked(), "", nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return netip.Prefix{}, "", errors.New("an address with a zone cannot be allowed; allow it without")
		}
		return netip.PrefixFrom(a, a.BitLen()), "", nil
	}
	if strings.Contains(s, ":") {
		return netip.Prefix{}, "", errors.New("not an IP address; a host name has no port, a CIDR prefix has a /")
	}
	h := normHost(s)
	if h == "" || len(h) > 253 {
		return netip.Prefix{}, "", errors.New("not a CIDR prefix, an IP address or a host name")
	}
	labels := strings.Split(h, ".")
	if a, _, err := hostAddr(h); a.IsValid() || err != nil || isNumber(labels[len(labels)-1]) {
		return netip.Prefix{}, "", errors.New("a number where a host name or an IPv4 address was expected; write the address as four decimal numbers (a.b.c.d)")
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return netip.Prefix{}, "", errors.New("not a CIDR prefix, an IP address or a host name (letters, digits, - and _ in dot-separated labels; an internationalised name in its xn-- form)")
		}
	}
	return netip.Prefix{}, h, nil
}

// normHost is a host name as Allow's names are matched: lower case, without
// a final dot.
func normHost(h string) string { return strings.ToLower(strings.TrimSuffix(h, ".")) }

// RefusedAddrError is the error of an http job refused by its policy: its
// URL, a redirect's URL or its proxy names an address the policy refuses,
// or a host name that resolved to one. The job fails permanently.
type RefusedAddrError struct {
	// Host is the URL's host as written (a name, or an IP address in
	// some form), or "" if unknown.
	Host string
	// Addr is the address refused.
	Addr netip.Addr
	// Reason says what Addr is: "a loopback address".
	Reason string
	// Proxy is true when Addr is the proxy's (HTTPPolicy.ProxyFromEnvironment).
	Proxy bool

	// dialed is the address dialed, HOST:PORT, when the refusal came from
	// the connection (for Proxy).
	dialed string
}

// Error says which address was refused, why, and how to allow it:
// "localhost resolves to 127.0.0.1, a loopback address, which http jobs
// may not reach unless allowed: hopper serve --http-allow 127.0.0.1 (and
// HOPPER_HTTP_ALLOW=127.0.0.1 for hopper enqueue and schedule add, which
// check too; kinds.HTTPPolicy.Allow in a program)".
func (e *RefusedAddrError) Error() string {
	var b strings.Builder
	if e.Proxy {
		b.WriteString("the proxy ")
	}
	switch lit, _, _ := hostAddr(e.Host); {
	case e.Host == "":
		fmt.Fprintf(&b, "%s is %s", e.Addr, e.Reason)
	case lit.WithZone("") == e.Addr && lit.String() == e.Host: // as written, maybe with a zone
		fmt.Fprintf(&b, "%s is %s", e.Host, e.Reason)
	case lit.IsValid():
		fmt.Fprintf(&b, "%s is %s, %s", e.Host, e.Addr, e.Reason)
	default:
		fmt.Fprintf(&b, "%s resolves to %s, %s", e.Host, e.Addr, e.Reason)
	}
	fmt.Fprintf(&b, ", which http jobs may not reach unless allowed: hopper serve --http-allow %s "+
		"(and %s=%s for hopper enqueue and schedule add, which check too; kinds.HTTPPolicy.Allow in a program)", e.Addr, httpAllowEnv, e.Addr)
	return b.String()
}

// httpAllowEnv is the variable whose addresses the hopper command's
// enqueueing commands allow (cli.HTTPAllowEnv, which imports this package).
const httpAllowEnv = "HOPPER_HTTP_ALLOW"

// redirectError is a redirect the policy does not follow.
type redirectError struct {
	to  string // the redirect's URL, without its user information (redactURL)
	err error
}

func (e *redirectError) Error() string { return fmt.Sprintf("redirect to %s: %v", e.to, e.err) }
func (e *redirectError) Unwrap() error { return e.err }

// HTTPRunner makes the requests of http jobs under one HTTPPolicy. It
// holds the HTTP client of the policy (its connections are reused from one
// request to the next), so build one per policy, once: NewHTTPRunner. It
// is safe for concurrent use.
type HTTPRunner struct {
	httpAllowed
	maxRedirects int                                   // 0: none followed
	proxy        func(*http.Request) (*url.URL, error) // nil: none
	client       *http.Client
	notify       *http.Client // notifications': the same transport, their own redirects (notifyRedirect)
}

// NewHTTPRunner returns a runner of http jobs under p, or p's Validate
// error.
func NewHTTPRunner(p HTTPPolicy) (*HTTPRunner, error) {
	al, err := p.allowed()
	if err != nil {
		return nil, err
	}
	r := &HTTPRunner{httpAllowed: al, maxRedirects: max(cmp.Or(p.MaxRedirects, DefaultHTTPMaxRedirects), 0)}
	// The settings of http.DefaultTransport, which a program may have
	// replaced, with the policy's dialer and proxy, and as many idle
	// connections to one host as to all: a process's workers often call
	// one host (an API, a webhook), and with the default of two per host
	// most calls of eight workers opened a connection of their own.
	t := &http.Transport{
		DialContext:           r.dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if p.ProxyFromEnvironment {
		t.Proxy, r.proxy = http.ProxyFromEnvironment, http.ProxyFromEnvironment
	}
	r.client = &http.Client{Transport: t, CheckRedirect: r.checkRedirect}
	r.notify = &http.Client{Transport: t, CheckRedirect: r.notifyRedirect}
	return r, nil
}

// CloseIdleConnections closes the connections r keeps open for reuse that
// no request is using, as http.Client's method does.
func (r *HTTPRunner) CloseIdleConnections() { r.client.CloseIdleConnections() }

// defaultHTTPRunner runs the http jobs of HTTP: the default policy.
var defaultHTTPRunner = sync.OnceValue(func() *HTTPRunner {
	r, err := NewHTTPRunner(HTTPPolicy{})
	if err != nil {
		panic("kinds: the default http policy: " + err.Error())
	}
	return r
})

// Check reports what Run would refuse before connecting: what a.Validate
// reports, then a URL whose host is an IP address the policy refuses (a
// *RefusedAddrError), in whatever form it is written, or an IPv4 address
// written in another form than a.b.c.d ("2130706433"), which resolvers
// read differently. A host name is not resolved: where it leads is checked
// when the connection is made.
func (r *HTTPRunner) Check(a HTTPArgs) error {
	if err := a.Validate(); err != nil {
		return err
	}
	return r.checkPolicy(a)
}

// checkPolicy is Check for args that passed their Validate (as
// hopper.RegisterChecked's check is called).
func (al httpAllowed) checkPolicy(a HTTPArgs) error {
	u, err := url.Parse(a.URL)
	if err != nil {
		return fmt.Errorf("http: bad url %q: %v", a.URL, err)
	}
	if err := al.checkURL(u); err != nil {
		return fmt.Errorf("http: %w", err)
	}
	return nil
}

// checkURL refuses a URL whose host is an IP literal the policy refuses or
// a number that is not an address written as one.
func (al httpAllowed) checkURL(u *url.URL) error {
	host := u.Hostname()
	if al.hosts[normHost(host)] {
		return nil
	}
	a, canonical, err := hostAddr(host)
	switch {
	case err != nil:
		return err
	case !a.IsValid():
		return nil // a name: checked when connecting
	}
	if re := al.refuse(a); re != nil {
		re.Host = host
		return re
	}
	if !canonical {
		return fmt.Errorf("host %s is the IPv4 address %s written in another form, which resolvers read differently: write %s", host, a, a)
	}
	return nil
}

// refuse returns the error refusing a connection to a, or nil if the
// policy allows it.
func (al httpAllowed) refuse(a netip.Addr) *RefusedAddrError {
	a = a.WithZone("")
	if al.allows(a) {
		return nil
	}
	why, inner := refusedBy(a)
	if why == "" || inner.IsValid() && al.allows(inner) {
		return nil
	}
	return &RefusedAddrError{Addr: a, Reason: why}
}

// allows reports whether a is in an allowed prefix, or is the IPv4-mapped
// form of an address in one.
func (al httpAllowed) allows(a netip.Addr) bool {
	for _, p := range al.prefixes {
		if p.Contains(a) || a.Is4In6() && p.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// dial connects as the policy's transport does: through a dialer whose
// Control hook checks the address of each connection attempt (after DNS
// resolution, before connect), unless addr's host is an allowed name.
func (r *HTTPRunner) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, _ := net.SplitHostPort(addr)
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if !r.hosts[normHost(host)] {
		d.Control = r.control
	}
	c, err := d.DialContext(ctx, network, addr)
	var re *RefusedAddrError
	if errors.As(err, &re) {
		re.Host, re.dialed = host, addr
	}
	return c, err
}

// control is the dialer's hook, called with the address about to be
// connected to.
func (al httpAllowed) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("http policy: cannot read the address %q being connected to", address)
	}
	if re := al.refuse(ap.Addr()); re != nil {
		return re
	}
	return nil
}

// checkRedirect is the client's redirect policy: at most al.maxRedirects,
// to http or https URLs whose host is not an IP literal the policy refuses
// (their connections are checked by the dialer as any other).
func (r *HTTPRunner) checkRedirect(req *http.Request, via []*http.Request) error {
	return r.followRedirect(req, via, redactURL(req.URL.String()))
}

// followRedirect is checkRedirect, its errors naming the redirect's URL
// as to.
func (r *HTTPRunner) followRedirect(req *http.Request, via []*http.Request, to string) error {
	if r.maxRedirects == 0 {
		return http.ErrUseLastResponse
	}
	if len(via) > r.maxRedirects {
		return &redirectError{to, fmt.Errorf("stopped after %d redirects, the policy's limit", r.maxRedirects)}
	}
	if s := req.URL.Scheme; s != "http" && s != "https" {
		return &redirectError{to, fmt.Errorf("scheme %q: must be http or https", s)}
	}
	if err := r.checkURL(req.URL); err != nil {
		return &redirectError{to, err}
	}
	return nil
}

// requestError is the error of a request that got no response: permanent
// when the policy refused it, naming what was refused.
func (r *HTTPRunner) requestError(req *http.Request, target string, err error, redact func(string) string) error {
	prefix := fmt.Sprintf("http %s %s", req.Method, target)
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redact(ue.URL) // net/http removes the password only
	}
	var rd *redirectError
	if errors.As(err, &rd) {
		return hopper.Permanent(fmt.Errorf("%s: %w", prefix, rd))
	}
	var re *RefusedAddrError
	if !errors.As(err, &re) {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	if r.proxy != nil && re.dialed != "" {
		if pu, _ := r.proxy(req); pu != nil && proxyAddr(pu) == re.dialed {
			re.Proxy = true
		}
	}
	if ue != nil && !re.Proxy && normHost(re.Host) != normHost(req.URL.Hostname()) {
		return hopper.Permanent(fmt.Errorf("%s: redirect to %s: %w", prefix, ue.URL, re))
	}
	return hopper.Permanent(fmt.Errorf("%s: %w", prefix, re))
}

// proxyAddr is the HOST:PORT the transport dials for the proxy u.
func proxyAddr(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := map[string]string{"http": "80", "https": "443", "socks5": "1080", "socks5h": "1080"}[u.Scheme]
	return net.JoinHostPort(u.Hostname(), port)
}
