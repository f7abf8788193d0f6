package kinds

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The addresses http jobs may not reach unless the operator allows them
// (HTTPPolicy.Allow): every address that reaches the server itself, the
// networks it sits on, or the services only those networks should see (a
// cloud's metadata service at 169.254.169.254, a database on 10.0.0.5),
// written the ways an attacker would write them. This file is the one home
// of the list; docs/security.md ("HTTP jobs: where a request can go")
// repeats it for readers.

// addrRange is a range of addresses refused by default, and what its
// addresses are, for error messages ("a loopback address").
type addrRange struct {
	prefix netip.Prefix
	what   string
}

// refusedRanges are the ranges refused by default, most specific first:
// an address's reason is that of the first range holding it.
var refusedRanges = []addrRange{
	// IPv4.
	{netip.MustParsePrefix("0.0.0.0/32"), "the unspecified address (0.0.0.0, which reaches the local host)"},
	{netip.MustParsePrefix("0.0.0.0/8"), `a "this network" address (0.0.0.0/8)`},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address (10.0.0.0/8)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared address (100.64.0.0/10, carrier-grade NAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address (169.254.0.0/16, where cloud metadata services answer)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address (172.16.0.0/12)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol assignment (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address (192.168.0.0/16)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address (198.18.0.0/15)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("255.255.255.255/32"), "the broadcast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address (240.0.0.0/4)"},
	// IPv6.
	{netip.MustParsePrefix("::/128"), "the unspecified address (::, which reaches the local host)"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address (64:ff9b:1::/48, which reaches IPv4 addresses of a private network)"},
	{netip.MustParsePrefix("fc00::/7"), "a unique-local address (fc00::/7)"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address (fe80::/10)"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address (fec0::/10)"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

// embedding is a range of IPv6 addresses that carry an IPv4 address, which
// the network delivers to (the host's own stack, a NAT64 gateway, a 6to4
// or Teredo relay): such an address is refused when the IPv4 address it
// carries is.
type embedding struct {
	prefix netip.Prefix
	form   string // "an IPv4-mapped form"
	// at is the offset of the IPv4 address in the IPv6 one.
	at int
	// xor is applied to the IPv4 address's bytes (Teredo hides it so).
	xor byte
}

// embeddings are checked after refusedRanges, so that :: and ::1 keep
// their own reasons rather than being read as IPv4-compatible forms.
var embeddings = []embedding{
	{netip.MustParsePrefix("::ffff:0:0/96"), "an IPv4-mapped form", 12, 0},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "an IPv4-translated form (::ffff:0:0:0/96)", 12, 0},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible form (::/96)", 12, 0},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 form (64:ff9b::/96)", 12, 0},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 form (2002::/16)", 2, 0},
	{netip.MustParsePrefix("2001::/32"), "a Teredo form (2001::/32)", 12, 0xff},
}

// refusedBy reports why the default policy refuses a, or "" if it does
// not. For an IPv6 address carrying an IPv4 one, the reason names both:
// "an IPv4-mapped form of 127.0.0.1, a loopback address". The IPv4
// address carried, if any, is returned too (the invalid Addr otherwise).
func refusedBy(a netip.Addr) (why string, inner netip.Addr) {
	a = a.WithZone("")
	for _, r := range refusedRanges {
		if r.prefix.Contains(a) {
			return r.what, netip.Addr{}
		}
	}
	if !a.Is6() {
		return "", netip.Addr{}
	}
	b := a.As16()
	for _, e := range embeddings {
		if !e.prefix.Contains(a) {
			continue
		}
		v4 := netip.AddrFrom4([4]byte{b[e.at] ^ e.xor, b[e.at+1] ^ e.xor, b[e.at+2] ^ e.xor, b[e.at+3] ^ e.xor})
		if what, _ := refusedBy(v4); what != "" {
			return fmt.Sprintf("%s of %s, %s", e.form, v4, what), v4
		}
		return "", netip.Addr{}
	}
	return "", netip.Addr{}
}

// hostAddr reads a URL's host (without brackets or port) as an IP address
// when it is one, in any form a resolver or a browser might read as one.
// It returns the invalid Addr for a host name. canonical is false for an
// IPv4 address written in another form than four decimal numbers
// ("2130706433", "0x7f.1", "0177.0.0.1", "127.0.0.1."), which Go's
// resolver would look up in DNS while others (inet_aton, browsers) read
// it as an address. A host whose last label is a number but that is no
// address ("1.2.3.4.5", "300.1.1.1"), or with a colon but no IPv6 address,
// is an error: no resolver agrees on it.
func hostAddr(host string) (a netip.Addr, canonical bool, err error) {
	h := strings.TrimSuffix(host, ".")
	if !strings.Contains(host, ":") && !isNumber(h[strings.LastIndexByte(h, '.')+1:]) {
		return netip.Addr{}, false, nil // a name (without parsing it, which would allocate an error)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a, true, nil
	}
	if a, err := netip.ParseAddr(h); err == nil && !strings.Contains(h, ":") {
		return a, false, nil
	}
	if strings.Contains(host, ":") {
		return netip.Addr{}, false, fmt.Errorf("host %s is not an IPv6 address", host) // only a bracketed address has colons
	}
	if a, ok := looseIPv4(strings.Split(h, ".")); ok {
		return a, false, nil
	}
	return netip.Addr{}, false, fmt.Errorf("host %s ends with a number but is not an IPv4 address", host)
}

// isNumber reports whether s is a number in a form looseIPv4 reads: decimal
// digits, or 0x followed by hexadecimal digits (possibly none).
func isNumber(s string) bool {
	if s == "" {
		return false
	}
	digits := "0123456789"
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s, digits = s[2:], "0123456789abcdefABCDEF"
	}
	for _, c := range s {
		if !strings.ContainsRune(digits, c) {
			return false
		}
	}
	return true
}

// looseIPv4 reads an IPv4 address as inet_aton and the WHATWG URL standard
// do: one to four numbers, each decimal, octal (a leading 0) or
// hexadecimal (0x), the last one filling the bytes the others left.
func looseIPv4(labels []string) (netip.Addr, bool) {
	if len(labels) > 4 {
		return netip.Addr{}, false
	}
	var n [4]uint64
	for i, l := range labels {
		if !isNumber(l) {
			return netip.Addr{}, false
		}
		base, digits := 10, l
		switch {
		case len(l) >= 2 && (l[1] == 'x' || l[1] == 'X'):
			base, digits = 16, l[2:]
		case len(l) > 1 && l[0] == '0':
			base, digits = 8, l[1:]
		}
		if digits == "" {
			digits = "0" // "0x" is zero, as browsers read it
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		n[i] = v
	}
	last := len(labels) - 1
	for i := range last {
		if n[i] > 0xff {
			return netip.Addr{}, false
		}
	}
	if n[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	var v uint32
	for i := range last {
		v |= uint32(n[i]) << (24 - 8*i)
	}
	v |= uint32(n[last])
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}
