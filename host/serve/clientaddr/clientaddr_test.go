package clientaddr_test

import (
	"net"
	"testing"

	"github.com/toolscript/toolscript/host/serve/clientaddr"
)

func TestOf(t *testing.T) {
	for _, tt := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 1}, "192.0.2.7"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 2}, "192.0.2.7"},
		// A client commonly has a whole IPv6 /64: its addresses count as one.
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:aaaa::1"), Port: 3}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:bbbb::9"), Port: 4}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:3::1"), Port: 5}, "2001:db8:1:3::/64"},
		{&net.UnixAddr{Name: "@sock", Net: "unix"}, "@sock"},
	} {
		if got := clientaddr.Of(tt.addr); got != tt.want {
			t.Errorf("Of(%v) = %q, want %q", tt.addr, got, tt.want)
		}
		// A request's RemoteAddr names the same client as its connection.
		if tcp, ok := tt.addr.(*net.TCPAddr); ok {
			if got := clientaddr.OfRemote(tcp.String()); got != tt.want {
				t.Errorf("OfRemote(%q) = %q, want %q", tcp.String(), got, tt.want)
			}
		}
	}
	for remote, want := range map[string]string{
		"[2001:db8:1:2:cccc::5]:443": "2001:db8:1:2::/64",
		"198.51.100.1:80":            "198.51.100.1",
		"not-an-address":             "not-an-address",
		"name:80":                    "name",
	} {
		if got := clientaddr.OfRemote(remote); got != want {
			t.Errorf("OfRemote(%q) = %q, want %q", remote, got, want)
		}
	}
}

// FuzzOfRemote: any RemoteAddr is named without a panic; an IP address
// is named as its connection would be, and every address of an IPv6 /64
// by one name.
func FuzzOfRemote(f *testing.F) {
	for _, s := range []string{"192.0.2.7:1", "[2001:db8::1]:443", "[::ffff:192.0.2.7]:2", "@sock", "", ":", "[::1]", "[fe80::1%eth0]:80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, remote string) {
		name := clientaddr.OfRemote(remote)
		host, port, err := net.SplitHostPort(remote)
		if err != nil {
			return
		}
		ip := net.ParseIP(host)
		if ip == nil {
			return
		}
		if got := clientaddr.Of(&net.TCPAddr{IP: ip, Port: 1}); got != name {
			t.Errorf("OfRemote(%q) = %q, its connection's name %q", remote, name, got)
		}
		if ip.To4() == nil {
			// Another address of the same /64.
			other := append(net.IP(nil), ip...)
			for i := 8; i < 16; i++ {
				other[i] ^= 0xa5
			}
			if other.To4() != nil {
				return // an IPv4-mapped address: IPv4's, not the /64's
			}
			if got := clientaddr.OfRemote(net.JoinHostPort(other.String(), port)); got != name {
				t.Errorf("%s and %s, of one /64, named %q and %q", ip, other, name, got)
			}
		}
	})
}
