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

func TestConnectionCapDefaults(t *testing.T) {
	for _, tt := range []struct {
		cfg              ServeConfig
		total, perClient int
	}{
		{ServeConfig{MaxConnections: 100}, 100, 25},
		{ServeConfig{MaxConnections: 2}, 2, 1},
		{ServeConfig{MaxConnections: 4000}, 4000, DefaultMaxConnectionsPerClient},
		{ServeConfig{MaxConnections: 10, MaxConnectionsPerClient: 50}, 10, 10},
		{ServeConfig{MaxConnections: 1000, MaxConnectionsPerClient: 1000}, 1000, 1000},
		{ServeConfig{}, DefaultMaxConnections(fileLimit()), min(DefaultMaxConnectionsPerClient, DefaultMaxConnections(fileLimit())/4)},
	} {
		total, perClient, warning, err := tt.cfg.connectionCaps()
		if err != nil || total != tt.total || perClient != tt.perClient || warning != "" {
			t.Errorf("%+v: %d, %d, %q, %v; want %d, %d", tt.cfg, total, perClient, warning, err, tt.total, tt.perClient)
		}
	}
	if files := fileLimit(); files > 0 && files < 1<<30 {
		if _, _, warning, _ := (ServeConfig{MaxConnections: int(files) + 1}).connectionCaps(); warning == "" {
			t.Error("no warning for a cap beyond the descriptor limit")
		}
	}
}
