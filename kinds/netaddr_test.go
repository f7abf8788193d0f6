package kinds

import (
	"net"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"
)

// forms returns the IPv6 forms that carry the IPv4 address a, by name:
// each reaches a (the host's stack, a NAT64 gateway, a 6to4 or Teredo
// relay), so each must be refused exactly when a is.
func forms(a netip.Addr) map[string]netip.Addr {
	b := a.As4()
	v6 := func(prefix string, at int, xor byte) netip.Addr {
		p := netip.MustParseAddr(prefix).As16()
		for i, c := range b {
			p[at+i] = c ^ xor
		}
		return netip.AddrFrom16(p)
	}
	return map[string]netip.Addr{
		"IPv4-mapped":     netip.AddrFrom16(a.As16()),
		"IPv4-compatible": v6("::", 12, 0),
		"IPv4-translated": v6("::ffff:0:0:0", 12, 0),
		"NAT64":           v6("64:ff9b::", 12, 0),
		"6to4":            v6("2002::", 2, 0),
		"Teredo":          v6("2001:0:4136:e378:8000::", 12, 0xff),
	}
}

// TestRefusedRanges checks every refused range at its first, last and a
// middle address, with the reason the error gives, and every IPv4 one in
// every IPv6 form that carries it.
func TestRefusedRanges(t *testing.T) {
	t.Parallel()
	r := defaultHTTPRunner()
	for _, tc := range []struct {
		first, mid, last string
		why              string
	}{
		{"0.0.0.0", "", "", "the unspecified address"},
		{"0.0.0.1", "0.1.2.3", "0.255.255.255", `a "this network" address`},
		{"10.0.0.0", "10.20.30.40", "10.255.255.255", "a private address (10.0.0.0/8)"},
		{"100.64.0.0", "100.100.100.200", "100.127.255.255", "a shared address"},
		{"127.0.0.0", "127.0.0.1", "127.255.255.255", "a loopback address"},
		{"169.254.0.0", "169.254.169.254", "169.254.255.255", "a link-local address (169.254.0.0/16, where cloud metadata"},
		{"172.16.0.0", "172.20.1.1", "172.31.255.255", "a private address (172.16.0.0/12)"},
		{"192.0.0.0", "192.0.0.170", "192.0.0.255", "an IETF protocol assignment"},
		{"192.168.0.0", "192.168.1.1", "192.168.255.255", "a private address (192.168.0.0/16)"},
		{"198.18.0.0", "198.18.5.5", "198.19.255.255", "a benchmarking address"},
		{"224.0.0.0", "239.1.2.3", "239.255.255.255", "a multicast address"},
		{"240.0.0.0", "250.1.2.3", "255.255.255.254", "a reserved address"},
		{"255.255.255.255", "", "", "the broadcast address"},
		{"::", "", "", "the unspecified address"},
		{"::1", "", "", "a loopback address"},
		{"64:ff9b:1::", "64:ff9b:1:2:3::8.8.8.8", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "a local-use NAT64 address"},
		{"fc00::", "fd12:3456::1", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a unique-local address"},
		{"fe80::", "fe80::1%eth0", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a link-local address (fe80::/10)"},
		{"fec0::", "fec0::1", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a site-local address"},
		{"ff00::", "ff02::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a multicast address"},
	} {
		for _, s := range []string{tc.first, tc.mid, tc.last} {
			if s == "" {
				continue
			}
			a := netip.MustParseAddr(s)
			re := r.refuse(a)
			if re == nil || !strings.HasPrefix(re.Reason, tc.why) {
				t.Errorf("%s: refused with %+v, want %q", s, re, tc.why)
				continue
			}
			if !a.Is4() {
				continue
			}
			for name, f := range forms(a) {
				re := r.refuse(f)
				if re != nil && (f == netip.IPv6Unspecified() || f == netip.IPv6Loopback()) {
					continue // the IPv4-compatible forms of 0.0.0.0 and 0.0.0.1, with reasons of their own
				}
				if re == nil || !strings.Contains(re.Reason, " of "+s+", "+tc.why) {
					t.Errorf("%s (%s form of %s): refused with %+v, want a reason naming %s", f, name, s, re, s)
				}
			}
		}
	}
}

// TestAllowedAddresses checks public addresses, those just outside the
// refused ranges, and the IPv6 forms of public IPv4 addresses.
func TestAllowedAddresses(t *testing.T) {
	t.Parallel()
	r := defaultHTTPRunner()
	for _, s := range []string{
		"1.1.1.1", "8.8.8.8", "1.0.0.0", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0",
		"126.255.255.255", "128.0.0.0", "169.253.255.255", "169.255.0.0", "172.15.255.255", "172.32.0.0",
		"192.0.1.0", "192.167.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255",
		"2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450::1", "fbff:ffff::1", "fe00::1",
		"::2:0:0", "64:ff9b:2::1", "2003::1",
	} {
		a := netip.MustParseAddr(s)
		if re := r.refuse(a); re != nil {
			t.Errorf("%s refused: %v", s, re)
		}
		if !a.Is4() {
			continue
		}
		for name, f := range forms(a) {
			if re := r.refuse(f); re != nil {
				t.Errorf("%s (%s form of %s) refused: %v", f, name, s, re)
			}
		}
	}
}

// TestAllowOpens checks what HTTPPolicy.Allow opens: prefixes and single
// addresses, in their IPv4-mapped and other forms too, and nothing else.
func TestAllowOpens(t *testing.T) {
	t.Parallel()
	r, err := NewHTTPRunner(HTTPPolicy{Allow: []string{"10.1.0.0/16", "127.0.0.2", "fd00:1::/32", "169.254.169.254/32", "hooks.internal"}})
	if err != nil {
		t.Fatal(err)
	}
	for s, allowed := range map[string]bool{
		"10.1.2.3": true, "::ffff:10.1.2.3": true, "64:ff9b::10.1.2.3": true, "127.0.0.2": true, "::ffff:127.0.0.2": true,
		"fd00:1::5": true, "169.254.169.254": true,
		"10.2.0.1": false, "127.0.0.1": false, "::ffff:127.0.0.1": false, "fd00:2::1": false, "169.254.169.253": false, "::1": false,
	} {
		if re := r.refuse(netip.MustParseAddr(s)); (re == nil) != allowed {
			t.Errorf("%s: refused %v, want allowed %v", s, re, allowed)
		}
	}
	if !r.hosts["hooks.internal"] || len(r.hosts) != 1 {
		t.Errorf("allowed hosts %v", r.hosts)
	}
}

// TestHTTPPolicyValidate checks the entries of Allow that are refused,
// naming the entry.
func TestHTTPPolicyValidate(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"10.0.0.0/8", "10.0.0.1/8", "::1", "fd00::/8", "127.0.0.1", "localhost", "Hooks.Internal.", "a-b_c.example", "xn--bcher-kva.example"} {
		if err := (HTTPPolicy{Allow: []string{ok}}).Validate(); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"":                   "not a CIDR prefix, an IP address or a host name",
		"10.0.0.0/33":        "not a CIDR prefix",
		"10.0.0.0/":          "not a CIDR prefix",
		"http://example.com": "a URL; give its host name or address alone",
		"example.com:80":     "not an IP address",
		"fe80::1%eth0":       "zone",
		"2130706433":         "write the address as four decimal numbers",
		"127.1":              "write the address as four decimal numbers",
		"1.2.3.4.5":          "write the address as four decimal numbers",
		"*.example.com":      "not a CIDR prefix, an IP address or a host name",
		"-bad.example":       "not a CIDR prefix, an IP address or a host name",
		"a..b":               "not a CIDR prefix, an IP address or a host name",
		"bücher.example":     "xn--",
		" 10.0.0.0/8":        "not a CIDR prefix",
	} {
		err := (HTTPPolicy{Allow: []string{"10.0.0.0/8", bad}}).Validate()
		if err == nil || !strings.Contains(err.Error(), `allow entry "`+bad+`"`) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error naming it and saying %q", bad, err, want)
		}
		if _, err := NewHTTPRunner(HTTPPolicy{Allow: []string{bad}}); err == nil {
			t.Errorf("NewHTTPRunner(%q): no error", bad)
		}
	}
}

// TestHostAddr checks how a URL's host is read as an address: canonical
// literals, the other forms resolvers and browsers read as IPv4 addresses,
// names, and numbers that are no address.
func TestHostAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		host      string
		addr      string // "" for a name
		canonical bool
		err       bool
	}{
		{host: "127.0.0.1", addr: "127.0.0.1", canonical: true},
		{host: "::ffff:127.0.0.1", addr: "::ffff:127.0.0.1", canonical: true},
		{host: "fe80::1%eth0", addr: "fe80::1%eth0", canonical: true},
		{host: "2130706433", addr: "127.0.0.1"},
		{host: "0x7f000001", addr: "127.0.0.1"},
		{host: "0X7F.1", addr: "127.0.0.1"},
		{host: "0177.0.0.1", addr: "127.0.0.1"},
		{host: "127.000.0.1", addr: "127.0.0.1"},
		{host: "127.1", addr: "127.0.0.1"},
		{host: "127.0.1", addr: "127.0.0.1"},
		{host: "127.0.0.1.", addr: "127.0.0.1"},
		{host: "0", addr: "0.0.0.0"},
		{host: "0x", addr: "0.0.0.0"},
		{host: "169.254.43518", addr: "169.254.169.254"},
		{host: "2852039166", addr: "169.254.169.254"},
		{host: "4294967295", addr: "255.255.255.255"},
		{host: "localhost"},
		{host: "example.com"},
		{host: "1.2.3.example"},
		{host: "0x7f.example"},
		{host: "4294967296", err: true},
		{host: "1.2.3.4.5", err: true},
		{host: "256.1.1.1", err: true},
		{host: "1.256.1.1", err: true},
		{host: "1.2.65536", err: true},
		{host: "08.1.1.1", err: true},
		{host: "example.123", err: true},
		{host: "1..1", err: true},
		{host: "::ffff:127.000.000.001", err: true},
		{host: "1::2::3", err: true},
	} {
		a, canonical, err := hostAddr(tc.host)
		want := netip.Addr{}
		if tc.addr != "" {
			want = netip.MustParseAddr(tc.addr)
		}
		if a != want || canonical != tc.canonical || (err != nil) != tc.err {
			t.Errorf("hostAddr(%q) = %v, %v, %v; want %v, %v, error %v", tc.host, a, canonical, err, want, tc.canonical, tc.err)
		}
	}
}

// TestRefusedRangesDocumented checks that docs/security.md lists every
// range of the one list, refusedRanges and embeddings (each written as a
// CIDR prefix in backquotes).
func TestRefusedRangesDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := make(map[netip.Prefix]bool)
	for _, m := range regexp.MustCompile("`([0-9a-fA-F:.]+/[0-9]+)`").FindAllStringSubmatch(string(doc), -1) {
		if p, err := netip.ParsePrefix(m[1]); err == nil {
			listed[p] = true
		}
	}
	for _, r := range refusedRanges {
		if !listed[r.prefix] {
			t.Errorf("docs/security.md does not list %s (%s)", r.prefix, r.what)
		}
	}
	for _, e := range embeddings {
		if !listed[e.prefix] {
			t.Errorf("docs/security.md does not list %s (%s)", e.prefix, e.form)
		}
	}
}

// stdlibRefuses is an oracle for IPv4 addresses, independent of
// refusedRanges: the standard library's classes, and the ranges it has no
// class for.
func stdlibRefuses(a netip.Addr) bool {
	ip := net.IP(a.AsSlice())
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsMulticast() || ip.IsUnspecified() || ip.Equal(net.IPv4bcast) {
		return true
	}
	b := a.As4()
	switch {
	case b[0] == 0, b[0] >= 240: // this network; reserved
		return true
	case b[0] == 100 && b[1]&0xc0 == 64: // 100.64.0.0/10
		return true
	case b[0] == 192 && b[1] == 0 && b[2] == 0: // 192.0.0.0/24
		return true
	case b[0] == 198 && b[1]&0xfe == 18: // 198.18.0.0/15
		return true
	}
	return false
}

// FuzzRefuse checks the address check on any address: an IPv4 address is
// refused exactly when the standard library's classes (and the ranges it
// has none for) say so, and so is each IPv6 form carrying it; an IPv6
// address the check allows is in none of the standard library's local
// classes; an allowed prefix is never refused. The seeds run in every
// go test.
func FuzzRefuse(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1", "10.0.0.1", "169.254.169.254", "100.64.0.1", "192.0.0.8", "198.18.0.1", "255.255.255.255",
		"0.0.0.0", "240.0.0.1", "224.0.0.1", "8.8.8.8", "1.1.1.1", "172.31.255.255", "172.32.0.0",
		"::1", "::", "fe80::1", "fd00::1", "ff02::1", "::ffff:127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::",
		"2001:0:0:0:0:0:80ff:fffe", "64:ff9b:1::1", "2606:4700::1111", "::7f00:1", "::ffff:0:7f00:1",
	} {
		a := netip.MustParseAddr(s)
		f.Add(a.AsSlice())
	}
	r := defaultHTTPRunner()
	f.Fuzz(func(t *testing.T, b []byte) {
		a, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		refused := r.refuse(a) != nil
		if a.Is4() {
			if want := stdlibRefuses(a); refused != want {
				t.Fatalf("%s: refused %v, the standard library's classes say %v", a, refused, want)
			}
			for name, f := range forms(a) {
				if got := r.refuse(f) != nil; got != refused {
					t.Fatalf("%s, the %s form of %s: refused %v, but %s refused %v", f, name, a, got, a, refused)
				}
			}
		} else if !refused {
			ip := net.IP(a.AsSlice())
			if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
				ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
				t.Fatalf("%s allowed, but the standard library calls it local", a)
			}
		}
		if refused {
			open, err := NewHTTPRunner(HTTPPolicy{Allow: []string{netip.PrefixFrom(a, a.BitLen()).String()}})
			if err != nil {
				t.Fatal(err)
			}
			if re := open.refuse(a); re != nil {
				t.Fatalf("%s refused although allowed: %v", a, re)
			}
		}
	})
}

// FuzzHostAddr checks that reading any host never panics, that a canonical
// address is one netip reads as written, that any other address read is
// an IPv4 one, and that the address read, written canonically, reads back
// as itself.
func FuzzHostAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "2130706433", "0x7f.1", "0177.0.0.1", "127.0.0.1.", "localhost", "1.2.3.4.5", "::1", "fe80::1%lo", "0x", "..", "", "1.2.3.0x", "09"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		a, canonical, err := hostAddr(host)
		switch {
		case err != nil && a.IsValid():
			t.Fatalf("hostAddr(%q): both %v and %v", host, a, err)
		case canonical && (netip.MustParseAddr(host) != a):
			t.Fatalf("hostAddr(%q) = %v, canonical", host, a)
		case a.IsValid() && !canonical && !a.Is4():
			t.Fatalf("hostAddr(%q) = %v, not canonical and not IPv4", host, a)
		}
		if a.IsValid() {
			if b, c, err := hostAddr(a.String()); b != a || !c || err != nil {
				t.Fatalf("hostAddr(%q) = %v, but hostAddr(%q) = %v, %v, %v", host, a, a.String(), b, c, err)
			}
		}
	})
}
