package upstream

import (
	"context"
	"testing"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// TestFlightsAttribute: a request that names no call goes to the one
// execution in flight only while every call the connection has carried
// served one client; a call of another client, even one that has ended,
// makes every such request unattributable from then on.
func TestFlightsAttribute(t *testing.T) {
	alice1, alice2 := &sdkcall.Client{Owner: "alice"}, &sdkcall.Client{Owner: "alice"}
	bob := &sdkcall.Client{Owner: "bob"}
	type step struct {
		client *sdkcall.Client
		ends   bool // the call ends before the request
	}
	for _, tc := range []struct {
		name     string
		calls    []step
		want     *sdkcall.Client
		inFlight int
		shared   bool
	}{
		{"none in flight", nil, nil, 0, false},
		{"one execution", []step{{client: alice1}, {client: alice1}}, alice1, 0, false},
		{"one client, an ended execution", []step{{client: alice1, ends: true}, {client: alice2}}, alice2, 0, false},
		{"one client, two executions in flight", []step{{client: alice1}, {client: alice2}}, nil, 2, false},
		{"another client's call has ended", []step{{client: alice1, ends: true}, {client: bob}}, nil, 1, true},
		{"another client's call in flight", []step{{client: alice1}, {client: bob}}, nil, 2, true},
		{"a call without a client", []step{{client: nil, ends: true}, {client: bob}}, nil, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f flights
			for _, s := range tc.calls {
				ctx := context.Background()
				if s.client != nil {
					ctx = sdkcall.WithClient(ctx, s.client)
				}
				forget := f.track(ctx)
				if s.ends {
					forget()
				}
			}
			fl, why := f.attribute()
			var got *sdkcall.Client
			if fl != nil {
				got = fl.client
			}
			if got != tc.want || why != (unattributed{inFlight: tc.inFlight, shared: tc.shared}) {
				t.Errorf("attributed to %+v (%+v), want %+v (in flight %d, shared %v)", got, why, tc.want, tc.inFlight, tc.shared)
			}
		})
	}
}
