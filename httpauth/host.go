package httpauth

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// The Host check. A web page whose host name its owner re-points at
// 127.0.0.1 (DNS rebinding) is, to the browser, of the same origin as a
// server listening there: it may read its pages and post to it, and a
// loopback server without tokens grants everything. What gives the page
// away is the Host header, which holds the page's own name. HostCheck
// answers only requests whose Host is one the server answers to:
//
//   - "localhost" and loopback addresses (127.0.0.0/8, ::1), with any port,
//     and the unspecified ones (0.0.0.0, ::), which reach this machine too
//     and which a server listening on all addresses is shown at;
//   - the address the request's connection arrived at (a server bound to
//     192.0.2.7 answers to "192.0.2.7:8080"): no rebinding page can carry
//     an address in its Host, only a name;
//   - the names, wildcards ("*.example.com": any name under example.com)
//     and addresses of HostOptions.Allowed.
//
// Host values are compared without their port, in lower case and without
// one trailing dot. Anything else that is not a plain name or address —
// user information ("a@b"), percent-encoding, a path, an IPv6 address
// without brackets, a bad port, a non-ASCII name (write those in their
// ASCII "xn--" form), an address in a short or octal form ("127.1") — is
// refused.

// HostOptions configure a HostCheck. The zero value answers to loopback
// names and addresses only, and to the address a connection arrived at.
type HostOptions struct {
	// Allowed are the other hosts the server answers to: names
	// ("hopper.example.com"), wildcards ("*.example.com", any name under
	// example.com but not example.com itself) and IP addresses
	// ("192.0.2.7", "2001:db8::7" or "[2001:db8::7]"), without ports.
	Allowed []string
	// Exempt are paths served whatever the Host, such as "/healthz" and
	// "/readyz" for orchestrators that probe by a name of their own.
	Exempt []string
	// Deny writes the response to a refused request (default DenyHost: a
	// short text page, 421 Misdirected Request).
	Deny func(w http.ResponseWriter, r *http.Request, err *HostError)
	// Logger receives the refused requests, at most a burst a minute and
	// then a count (default slog.Default()).
	Logger *slog.Logger
	// OnFailure, if set, is called with ReasonHost for every refused
	// request (for metrics). It must be fast and must not block.
	OnFailure func(reason string)
	// SecretPaths are path prefixes whose rest is a secret (the external
	// checks' "/ping/", whose next segment is a ping ID): a refused
	// request's path is logged as the prefix and "…".
	SecretPaths []string
}

// HostCheck refuses requests whose Host header names a host the server
// does not answer to (see HostOptions). Make one with NewHostCheck and
// wrap the server's whole handler in its Handler. It is safe for
// concurrent use.
type HostCheck struct {
	o        HostOptions
	names    map[string]bool
	suffixes []string // ".example.com" for "*.example.com"
	addrs    map[netip.Addr]bool
	exempt   map[string]bool
	logs     logLimiter
}

// NewHostCheck returns the check of o, or an error naming the entry of
// o.Allowed at fault.
func NewHostCheck(o HostOptions) (*HostCheck, error) {
	c := &HostCheck{o: o, names: map[string]bool{}, addrs: map[netip.Addr]bool{}, exempt: map[string]bool{}}
	if c.o.Deny == nil {
		c.o.Deny = DenyHost
	}
	if c.o.Logger == nil {
		c.o.Logger = slog.Default()
	}
	for _, p := range o.Exempt {
		c.exempt[p] = true
	}
	for _, e := range o.Allowed {
		if err := c.allow(strings.TrimSpace(e)); err != nil {
			return nil, fmt.Errorf("allowed host %q: %w", e, err)
		}
	}
	return c, nil
}

// allow adds one entry of HostOptions.Allowed.
func (c *HostCheck) allow(e string) error {
	if e == "" {
		return fmt.Errorf("empty")
	}
	for _, r := range e {
		if r > 0x7e {
			return fmt.Errorf("not ASCII: write the name in its ASCII form (xn--…)")
		}
	}
	if inner, ok := strings.CutPrefix(e, "["); ok {
		if e, ok = strings.CutSuffix(inner, "]"); !ok {
			return fmt.Errorf("an IPv6 address in brackets lacks its ]")
		}
	}
	if ip, err := netip.ParseAddr(e); err == nil {
		switch {
		case ip.Zone() != "":
			return fmt.Errorf("an address with a zone is not a host")
		case ip.IsUnspecified():
			return fmt.Errorf("%s is no address a client connects to", ip)
		}
		c.addrs[ip.Unmap()] = true
		return nil
	}
	if strings.Contains(e, ":") {
		return fmt.Errorf("give hosts without a port: every port is allowed")
	}
	e = strings.ToLower(strings.TrimSuffix(e, "."))
	if rest, ok := strings.CutPrefix(e, "*."); ok {
		if !isName(rest) || !strings.Contains(rest, ".") {
			return fmt.Errorf("want *. and a name of at least two labels, such as *.example.com")
		}
		c.suffixes = append(c.suffixes, "."+rest)
		return nil
	}
	if !isName(e) {
		return fmt.Errorf("want a host name (letters, digits, dashes, underscores and dots; the last label not only digits), *.NAME or an IP address")
	}
	c.names[e] = true
	return nil
}

// isName reports whether s, lower case and without a trailing dot, is a
// host name: dot-separated labels of 1 to 63 letters, digits, dashes and
// underscores, at most 253 bytes, the last label not all digits (it would
// be an address in some short form, such as 127.1).
func isName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return false
		}
		for i := 0; i < len(l); i++ {
			b := l[i]
			if !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' || b == '_') {
				return false
			}
		}
	}
	last := labels[len(labels)-1]
	return strings.TrimLeft(last, "0123456789") != ""
}

// splitHost reads a Host header value: a name (lower case, without one
// trailing dot) or an IP address (unmapped), and a port that may be
// missing or empty. ok is false for anything else.
func splitHost(host string) (name string, ip netip.Addr, ok bool) {
	if host == "" || len(host) > 300 {
		return "", ip, false
	}
	h, port := host, ""
	if inner, ok := strings.CutPrefix(host, "["); ok {
		end := strings.IndexByte(inner, ']')
		if end < 0 {
			return "", ip, false
		}
		h, port = inner[:end], inner[end+1:]
		if port != "" && port[0] != ':' {
			return "", ip, false
		}
		addr, err := netip.ParseAddr(h)
		if err != nil || !addr.Is6() || addr.Zone() != "" || !validPort(strings.TrimPrefix(port, ":")) {
			return "", ip, false
		}
		return "", addr.Unmap(), true
	}
	if i := strings.IndexByte(host, ':'); i >= 0 {
		h, port = host[:i], host[i+1:]
		if !validPort(port) {
			return "", ip, false
		}
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if ip, err := netip.ParseAddr(h); err == nil && ip.Is4() {
		return "", ip, true
	}
	if !isName(h) {
		return "", ip, false
	}
	return h, ip, true
}

// validPort reports whether p is a port: empty, or a decimal number of at
// most five digits up to 65535.
func validPort(p string) bool {
	if p == "" {
		return true
	}
	if len(p) > 5 || strings.Trim(p, "0123456789") != "" {
		return false
	}
	n, _ := strconv.Atoi(p)
	return n <= 65535
}

// allows reports whether the check answers a request whose Host header is
// host, on a connection that arrived at local (invalid if unknown).
func (c *HostCheck) allows(host string, local netip.Addr) bool {
	name, ip, ok := splitHost(host)
	switch {
	case !ok:
		return false
	case ip.IsValid():
		return ip.IsLoopback() || ip.IsUnspecified() || ip == local.Unmap().WithZone("") || c.addrs[ip]
	case name == "localhost" || c.names[name]:
		return true
	}
	for _, s := range c.suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// Check returns nil if c answers r, else a *HostError.
func (c *HostCheck) Check(r *http.Request) *HostError {
	if c.exempt[r.URL.Path] {
		return nil
	}
	var local netip.Addr
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			local = ap.Addr()
		}
	}
	if c.allows(r.Host, local) {
		return nil
	}
	return &HostError{Host: r.Host}
}

// Handler returns h behind the check: a refused request gets
// HostOptions.Deny's response, is logged (at a bounded rate) and is
// reported to HostOptions.OnFailure.
func (c *HostCheck) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := c.Check(r)
		if err == nil {
			h.ServeHTTP(w, r)
			return
		}
		if c.o.OnFailure != nil {
			c.o.OnFailure(ReasonHost)
		}
		c.logs.log(c.o.Logger, time.Now(), slog.LevelWarn, "http: request for another host refused (DNS rebinding?)", ReasonHost,
			"host", clipHost(r.Host), "remote", r.RemoteAddr, "method", r.Method, "path", c.logPath(r.URL.Path))
		c.o.Deny(w, r, err)
	})
}

// logPath is path as logged: without the secret of a SecretPaths path.
func (c *HostCheck) logPath(path string) string {
	for _, p := range c.o.SecretPaths {
		if strings.HasPrefix(path, p) && len(path) > len(p) {
			return p + "…"
		}
	}
	return path
}

// HostError is why a HostCheck refuses a request.
type HostError struct {
	// Host is the request's Host header.
	Host string
}

// Error implements error.
func (e *HostError) Error() string {
	return fmt.Sprintf("this server does not answer to host %q: it answers to localhost, loopback addresses, "+
		"the address it was reached at and the hosts given to --allowed-hosts (a guard against DNS rebinding)", clipHost(e.Host))
}

func clipHost(h string) string {
	if len(h) > 100 {
		return h[:100] + "…"
	}
	return h
}

// DenyHost is HostOptions.Deny's default: 421 Misdirected Request with a
// short text page saying why.
func DenyHost(w http.ResponseWriter, r *http.Request, err *HostError) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusMisdirectedRequest)
	fmt.Fprintf(w, "421 Misdirected Request: %v\n", err)
}
