package outbound

import "net/netip"

// metadataAddrs are the cloud providers' instance and workload metadata/credential
// endpoints. They are refused even when an AllowPrefixes entry covers them, unless the
// entry is exactly the address.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean, …
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task credentials
	netip.MustParseAddr("169.254.170.23"),  // AWS EKS Pod Identity agent
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IMDS over IPv6
	netip.MustParseAddr("fd00:ec2::23"),    // AWS EKS Pod Identity agent over IPv6
	netip.MustParseAddr("fd20:ce::254"),    // GCP metadata server over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("168.63.129.16"),   // Azure WireServer (a public address)
}

type special struct {
	prefix netip.Prefix
	reason string
}

func sp(prefix, reason string) special {
	return special{netip.MustParsePrefix(prefix), reason}
}

// specialV4 and specialV6 are the ranges refused, first match wins (so the more specific
// entries come first). Sources: IANA IPv4/IPv6 Special-Purpose Address Registries.
var specialV4 = []special{
	sp("0.0.0.0/32", "unspecified"), // Linux connects 0.0.0.0 to the local host
	sp("0.0.0.0/8", "this network"),
	sp("10.0.0.0/8", "private"),
	sp("100.64.0.0/10", "shared address space (CGNAT)"),
	sp("127.0.0.0/8", "loopback"),
	sp("169.254.0.0/16", "link-local"),
	sp("172.16.0.0/12", "private"),
	sp("192.0.0.0/24", "IETF protocol assignments"),
	sp("192.0.2.0/24", "documentation"),
	sp("192.88.99.0/24", "6to4 relay anycast"),
	sp("192.168.0.0/16", "private"),
	sp("198.18.0.0/15", "benchmarking"),
	sp("198.51.100.0/24", "documentation"),
	sp("203.0.113.0/24", "documentation"),
	sp("224.0.0.0/4", "multicast"),
	sp("255.255.255.255/32", "broadcast"),
	sp("240.0.0.0/4", "reserved"),
}

var specialV6 = []special{
	sp("::/128", "unspecified"),
	sp("::1/128", "loopback"),
	sp("::/96", "IPv4-compatible (deprecated)"),
	sp("::ffff:0:0:0/96", "IPv4-translated"),
	sp("64:ff9b:1::/48", "local-use NAT64"),
	sp("100::/64", "discard-only"),
	sp("2001::/32", "Teredo"),
	sp("2001:2::/48", "benchmarking"),
	sp("2001::/23", "IETF protocol assignments"),
	sp("2001:db8::/32", "documentation"),
	sp("3fff::/20", "documentation"),
	sp("fc00::/7", "private"),
	sp("fe80::/10", "link-local"),
	sp("fec0::/10", "site-local (deprecated)"),
	sp("ff00::/8", "multicast"),
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052 well-known prefix
	sixToFour = netip.MustParsePrefix("2002::/16")    // RFC 3056
	global6   = netip.MustParsePrefix("2000::/3")     // all IPv6 global unicast allocated so far
)

// Blocked reports why the policy refuses ip, "" when it allows it. Refused: loopback,
// private (RFC 1918, RFC 4193), link-local, cloud metadata addresses, unspecified, "this
// network", multicast, broadcast, CGNAT, documentation, benchmarking and other reserved
// ranges, IPv6 outside 2000::/3 (except NAT64 of an allowed IPv4 address), Teredo; an
// IPv4-mapped IPv6 address is judged as its IPv4 address, a 6to4 or NAT64 address also by
// the IPv4 address it embeds. AllowLoopback exempts 127.0.0.0/8 and ::1; AllowPrefixes
// exempt what they cover, except a metadata address, which only an entry of exactly that
// address exempts. The zone of an IPv6 address is ignored.
func (p Policy) Blocked(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid address"
	}
	ip = ip.WithZone("").Unmap()
	v4, via := embeddedV4(ip)
	if isMetadata(ip) && !p.allowsExactly(ip) {
		return "cloud metadata"
	}
	if via != "" && isMetadata(v4) && !p.allowsExactly(v4) && !p.allowsExactly(ip) {
		return "cloud metadata (" + via + " of " + v4.String() + ")"
	}
	if p.allowsPrefix(ip) || (p.AllowLoopback && ip.IsLoopback()) {
		return ""
	}
	if via != "" {
		if r := p.Blocked(v4); r != "" {
			return r + " (" + via + " of " + v4.String() + ")"
		}
		return ""
	}
	table := specialV4
	if ip.Is6() {
		table = specialV6
	}
	for _, s := range table {
		if s.prefix.Contains(ip) {
			return s.reason
		}
	}
	if ip.Is6() && !global6.Contains(ip) {
		return "reserved"
	}
	return ""
}

// embeddedV4 returns the IPv4 address a NAT64 (well-known prefix) or 6to4 address carries.
func embeddedV4(ip netip.Addr) (netip.Addr, string) {
	if !ip.Is6() {
		return netip.Addr{}, ""
	}
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), "NAT64"
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4"
	}
	return netip.Addr{}, ""
}

func isMetadata(ip netip.Addr) bool {
	for _, m := range metadataAddrs {
		if ip == m {
			return true
		}
	}
	return false
}

// canonicalPrefix masks pf and turns an IPv4-mapped IPv6 prefix into an IPv4 one, so that
// it matches the unmapped addresses Blocked compares it with.
func canonicalPrefix(pf netip.Prefix) netip.Prefix {
	if !pf.IsValid() {
		return pf
	}
	if a := pf.Addr(); a.Is4In6() && pf.Bits() >= 96 {
		pf = netip.PrefixFrom(a.Unmap(), pf.Bits()-96)
	}
	return pf.Masked()
}

func (p Policy) allowsPrefix(ip netip.Addr) bool {
	for _, pf := range p.AllowPrefixes {
		if pf = canonicalPrefix(pf); pf.IsValid() && pf.Contains(ip) {
			return true
		}
	}
	return false
}

func (p Policy) allowsExactly(ip netip.Addr) bool {
	for _, pf := range p.AllowPrefixes {
		if pf = canonicalPrefix(pf); pf.IsValid() && pf.IsSingleIP() && pf.Addr() == ip {
			return true
		}
	}
	return false
}
