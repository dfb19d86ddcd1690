package hosted

import (
	"context"
	"net"
	"net/http"
	"testing"
)

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

// fakeConn is a connection from an address, which records its close.
type fakeConn struct {
	net.Conn
	from   net.Addr
	closed bool
}

func (c *fakeConn) RemoteAddr() net.Addr { return c.from }
func (c *fakeConn) Close() error         { c.closed = true; return nil }

// TestEvictionOrder: at a cap, the place taken is that of a connection
// waiting for a request: one that has sent no whole request head before
// an idle keep-alive one, the new connection's own client's before
// another's, the oldest first; never one with a request in progress.
func TestEvictionOrder(t *testing.T) {
	type conn struct {
		from  string
		state string // "fresh", "idle" or "busy"
	}
	for _, tt := range []struct {
		name     string
		open     []conn
		from     string
		evicted  int // index in open; -1: none, the new one is shed
		shedding string
	}{
		{"the oldest fresh", []conn{{"a", "fresh"}, {"b", "fresh"}, {"c", "fresh"}}, "d", 0, ""},
		{"fresh before idle", []conn{{"a", "idle"}, {"b", "fresh"}, {"c", "busy"}}, "d", 1, ""},
		{"the client's own fresh first", []conn{{"a", "fresh"}, {"b", "fresh"}, {"d", "fresh"}}, "d", 2, ""},
		{"anyone's fresh before the client's idle", []conn{{"d", "idle"}, {"a", "fresh"}, {"b", "busy"}}, "d", 1, ""},
		{"the client's idle before another's", []conn{{"a", "idle"}, {"d", "idle"}, {"b", "busy"}}, "d", 1, ""},
		{"the oldest idle", []conn{{"a", "busy"}, {"b", "idle"}, {"c", "idle"}}, "d", 1, ""},
		{"all in use", []conn{{"a", "busy"}, {"b", "busy"}, {"c", "busy"}}, "d", -1, ShedConnections},
		{"at the client's cap, its own only", []conn{{"a", "fresh"}, {"d", "busy"}, {"d", "fresh"}}, "d", 2, ""},
		{"at the client's cap, all in use", []conn{{"a", "fresh"}, {"d", "busy"}, {"d", "busy"}}, "d", -1, ShedClientConnections},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimitListener(nil, 3, 2, nil, nil)
			addr := func(from string) net.Addr { return &net.UnixAddr{Name: from, Net: "unix"} }
			fakes := make([]*fakeConn, len(tt.open))
			for i, c := range tt.open {
				fakes[i] = &fakeConn{from: addr(c.from)}
				cc, over, _ := l.admit(fakes[i])
				if over != "" {
					t.Fatalf("connection %d over %s", i, over)
				}
				switch c.state {
				case "busy":
					l.tracking(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
						cc.running++ // stays in use once the handler returns
					})).ServeHTTP(nil, (&http.Request{}).WithContext(l.connContext(context.Background(), cc)))
				case "idle":
					l.connState(cc, http.StateIdle)
				}
			}
			_, over, evicted := l.admit(&fakeConn{from: addr(tt.from)})
			if over != tt.shedding {
				t.Errorf("over %q, want %q", over, tt.shedding)
			}
			switch {
			case tt.evicted < 0 && evicted != nil:
				t.Errorf("evicted a connection from %s, want none", evicted.client)
			case tt.evicted >= 0 && (evicted == nil || evicted.Conn != fakes[tt.evicted]):
				t.Errorf("evicted %v, want connection %d", evicted, tt.evicted)
			}
		})
	}
}
