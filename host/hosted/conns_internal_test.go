package hosted

import (
	"net"
	"testing"
)

func TestClientKey(t *testing.T) {
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
		if got := clientKey(tt.addr); got != tt.want {
			t.Errorf("clientKey(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}
