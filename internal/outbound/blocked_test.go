package outbound

import (
	"net/netip"
	"strings"
	"testing"
)

func TestBlocked(t *testing.T) {
	prod := Policy{}
	loop := Policy{AllowLoopback: true}
	onPrem := Policy{AllowPrefixes: mustPrefixes(t, "10.0.0.0/8", "fd12:3456::/32", "169.254.0.0/16", "127.0.0.1", "0.0.0.0/0")}
	metaExact := Policy{AllowPrefixes: mustPrefixes(t, "169.254.169.254/32", "fd00:ec2::254")}
	metaMapped := Policy{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("::ffff:169.254.169.254/128")}}
	nat64Allowed := Policy{AllowPrefixes: mustPrefixes(t, "64:ff9b::/96", "2002::/16")}
	v4Ten := Policy{AllowPrefixes: mustPrefixes(t, "10.0.0.0/8")}

	tests := []struct {
		name   string
		policy Policy
		ip     string
		want   string // "" allowed, else a substring of the reason
	}{
		// Public addresses.
		{"public v4", prod, "93.184.215.14", ""},
		{"public v4 8.8.8.8", prod, "8.8.8.8", ""},
		{"public v6", prod, "2606:2800:21f:cb07:6820:80da:af6b:8b2c", ""},
		{"public v4 mapped", prod, "::ffff:93.184.215.14", ""},
		{"just below 10/8", prod, "9.255.255.255", ""},
		{"just after 172.16/12", prod, "172.32.0.1", ""},
		{"just outside CGNAT", prod, "100.128.0.1", ""},

		// Loopback.
		{"loopback v4", prod, "127.0.0.1", "loopback"},
		{"loopback v4 other", prod, "127.1.2.3", "loopback"},
		{"loopback v6", prod, "::1", "loopback"},
		{"loopback mapped", prod, "::ffff:127.0.0.1", "loopback"},
		{"loopback allowed v4", loop, "127.0.0.1", ""},
		{"loopback allowed 127/8", loop, "127.0.0.2", ""},
		{"loopback allowed v6", loop, "::1", ""},
		{"loopback allowed mapped", loop, "::ffff:127.0.0.1", ""},
		{"AllowLoopback leaves private", loop, "10.0.0.1", "private"},
		{"AllowLoopback leaves unspecified", loop, "0.0.0.0", "unspecified"},

		// Private.
		{"rfc1918 10", prod, "10.0.0.5", "private"},
		{"rfc1918 172", prod, "172.16.0.1", "private"},
		{"rfc1918 172 top", prod, "172.31.255.255", "private"},
		{"rfc1918 192.168", prod, "192.168.1.5", "private"},
		{"rfc1918 mapped", prod, "::ffff:10.0.0.5", "private"},
		{"ula fc", prod, "fc00::1", "private"},
		{"ula fd", prod, "fd12:3456::1", "private"},
		{"private exempt v4", onPrem, "10.20.30.40", ""},
		{"private exempt mapped", onPrem, "::ffff:10.20.30.40", ""},
		{"private exempt v6", onPrem, "fd12:3456::1", ""},
		{"private outside exemption", v4Ten, "192.168.1.1", "private"},
		{"prefix exempts loopback address", onPrem, "127.0.0.1", ""},
		{"prefix exempts only what it covers", Policy{AllowPrefixes: mustPrefixes(t, "127.0.0.1")}, "127.0.0.2", "loopback"},

		// Link-local.
		{"link-local v4", prod, "169.254.1.1", "link-local"},
		{"link-local v6", prod, "fe80::1", "link-local"},
		{"link-local v6 zone", prod, "fe80::1%eth0", "link-local"},
		{"link-local mapped", prod, "::ffff:169.254.1.1", "link-local"},
		{"link-local exempt", onPrem, "169.254.1.1", ""},

		// Cloud metadata: never exempted by a covering range.
		{"metadata", prod, "169.254.169.254", "cloud metadata"},
		{"metadata mapped", prod, "::ffff:169.254.169.254", "cloud metadata"},
		{"metadata v6", prod, "fd00:ec2::254", "cloud metadata"},
		{"metadata alibaba", prod, "100.100.100.200", "cloud metadata"},
		{"metadata azure wireserver", prod, "168.63.129.16", "cloud metadata"},
		{"metadata ecs", prod, "169.254.170.2", "cloud metadata"},
		{"metadata eks pod identity", prod, "169.254.170.23", "cloud metadata"},
		{"metadata not exempt by 169.254/16", onPrem, "169.254.169.254", "cloud metadata"},
		{"metadata not exempt by 0/0", onPrem, "100.100.100.200", "cloud metadata"},
		{"metadata not exempt by AllowLoopback", loop, "169.254.169.254", "cloud metadata"},
		{"metadata not exempt by fd00::/8", Policy{AllowPrefixes: mustPrefixes(t, "fd00::/8")}, "fd00:ec2::254", "cloud metadata"},
		{"metadata exact v4", metaExact, "169.254.169.254", ""},
		{"metadata exact v4 mapped", metaExact, "::ffff:169.254.169.254", ""},
		{"metadata exact v6", metaExact, "fd00:ec2::254", ""},
		{"metadata exact via mapped entry", metaMapped, "169.254.169.254", ""},
		{"metadata exact does not exempt neighbour", metaExact, "169.254.169.253", "link-local"},
		{"metadata via NAT64", prod, "64:ff9b::a9fe:a9fe", "cloud metadata"},
		{"metadata via NAT64 not exempt by NAT64 range", nat64Allowed, "64:ff9b::a9fe:a9fe", "cloud metadata"},
		{"metadata via 6to4", nat64Allowed, "2002:a9fe:a9fe::1", "cloud metadata"},

		// Unspecified, this network.
		{"unspecified v4", prod, "0.0.0.0", "unspecified"},
		{"unspecified v6", prod, "::", "unspecified"},
		{"unspecified mapped", prod, "::ffff:0.0.0.0", "unspecified"},
		{"this network", prod, "0.1.2.3", "this network"},

		// Multicast, broadcast, reserved.
		{"multicast v4", prod, "224.0.0.1", "multicast"},
		{"multicast v4 top", prod, "239.255.255.250", "multicast"},
		{"multicast v6", prod, "ff02::1", "multicast"},
		{"multicast mapped", prod, "::ffff:224.0.0.1", "multicast"},
		{"broadcast", prod, "255.255.255.255", "broadcast"},
		{"broadcast mapped", prod, "::ffff:255.255.255.255", "broadcast"},
		{"class E", prod, "240.0.0.1", "reserved"},

		// CGNAT.
		{"cgnat", prod, "100.64.0.1", "CGNAT"},
		{"cgnat top", prod, "100.127.255.254", "CGNAT"},
		{"cgnat mapped", prod, "::ffff:100.64.0.1", "CGNAT"},

		// Documentation, benchmarking, protocol assignments.
		{"doc test-net-1", prod, "192.0.2.1", "documentation"},
		{"doc test-net-2", prod, "198.51.100.7", "documentation"},
		{"doc test-net-3", prod, "203.0.113.9", "documentation"},
		{"doc v6", prod, "2001:db8::1", "documentation"},
		{"doc v6 3fff", prod, "3fff::1", "documentation"},
		{"benchmark", prod, "198.18.0.1", "benchmarking"},
		{"benchmark top", prod, "198.19.255.255", "benchmarking"},
		{"benchmark v6", prod, "2001:2::1", "benchmarking"},
		{"ietf v4", prod, "192.0.0.8", "IETF"},
		{"6to4 anycast", prod, "192.88.99.1", "6to4 relay"},
		{"teredo", prod, "2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"},
		{"site-local", prod, "fec0::1", "site-local"},
		{"discard", prod, "100::1", "discard"},
		{"v4-compatible", prod, "::127.0.0.1", "IPv4-compatible"},
		{"v4-translated", prod, "::ffff:0:10.0.0.1", "IPv4-translated"},
		{"reserved v6", prod, "4000::1", "reserved"},
		{"local-use NAT64", prod, "64:ff9b:1::a00:1", "local-use NAT64"},

		// Embeddings: 6to4 and NAT64 of blocked IPv4 addresses.
		{"6to4 private", prod, "2002:a00:5::1", "private (6to4 of 10.0.0.5)"},
		{"6to4 loopback", prod, "2002:7f00:1::1", "loopback"},
		{"6to4 public", prod, "2002:5db8:d70e::1", ""},
		{"nat64 private", prod, "64:ff9b::c0a8:105", "private (NAT64 of 192.168.1.5)"},
		{"nat64 loopback", prod, "64:ff9b::7f00:1", "loopback"},
		{"nat64 public", prod, "64:ff9b::5db8:d70e", ""},
		{"nat64 private exempt by v4 range", v4Ten, "64:ff9b::a00:5", ""},
		{"nat64 loopback exempt by AllowLoopback", loop, "64:ff9b::7f00:1", ""},
		{"6to4 private exempt by v6 range", nat64Allowed, "2002:a00:5::1", ""},

		{"invalid", prod, "", "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ip netip.Addr
			if tt.ip != "" {
				ip = netip.MustParseAddr(tt.ip)
			}
			got := tt.policy.Blocked(ip)
			switch {
			case tt.want == "" && got != "":
				t.Errorf("Blocked(%s) = %q, want allowed", tt.ip, got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("Blocked(%s) = %q, want it to contain %q", tt.ip, got, tt.want)
			}
		})
	}
}

// Every IPv4 special range is refused in its IPv4-mapped IPv6 form as well.
func TestBlockedMappedMatchesV4(t *testing.T) {
	for _, s := range specialV4 {
		ip := s.prefix.Addr()
		mapped := netip.AddrFrom16(ip.As16())
		if got, want := (Policy{}).Blocked(mapped), (Policy{}).Blocked(ip); got != want || got == "" {
			t.Errorf("Blocked(%s) = %q, Blocked(%s) = %q", mapped, got, ip, want)
		}
	}
}

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes([]string{"10.0.0.0/8", " 192.168.1.5 ", "", "fd12::/16", "2001:db8::1", "10.1.2.3/8", "::ffff:10.0.0.0/104"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.168.1.5/32", "fd12::/16", "2001:db8::1/128", "10.0.0.0/8", "10.0.0.0/8"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("entry %d = %s, want %s", i, got[i], want[i])
		}
	}

	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0", "fe80::1%eth0", "10.0.0.0/", "/8"} {
		_, err := ParsePrefixes([]string{"10.0.0.0/8", bad})
		if err == nil {
			t.Errorf("ParsePrefixes(%q): no error", bad)
			continue
		}
		if !strings.Contains(err.Error(), `"`+bad+`"`) || !strings.Contains(err.Error(), "range 2") {
			t.Errorf("ParsePrefixes(%q): error %q does not name the entry", bad, err)
		}
	}
}

func mustPrefixes(t *testing.T, list ...string) []netip.Prefix {
	t.Helper()
	p, err := ParsePrefixes(list)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
