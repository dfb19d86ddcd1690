package auth_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/auth/authtest"
)

// clock is a clock a test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// from returns a client whose connections come from ip (any address of
// 127.0.0.0/8 reaches the loopback server).
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// send sends a request to f's /mcp through client with token; it returns
// the status and the Retry-After.
func (f *fixture) send(t *testing.T, client *http.Client, token string) (int, string) {
	t.Helper()
	status, retry, err := f.trySend(client, token)
	if err != nil {
		t.Fatal(err)
	}
	return status, retry
}

// trySend is send for any goroutine.
func (f *fixture) trySend(client *http.Client, token string) (status int, retryAfter string, err error) {
	req, err := http.NewRequest(http.MethodPost, f.server.URL+"/mcp", strings.NewReader("{}"))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), nil
}

// TestFailureBound: a client address whose tokens keep failing gets 429
// with Retry-After, before any signature check, once past its bound;
// other addresses, and tokens already verified, are not slowed; the bound
// refills with time.
func TestFailureBound(t *testing.T) {
	issuer := authtest.NewIssuer(t, authtest.Options{})
	now := &clock{now: time.Now()}
	var throttled atomic.Int64
	const bound = 3 // failures a minute: one every 20s
	f := newFixture(t, issuer, auth.Config{FailuresPerMinute: bound, Now: now.Now,
		OnThrottled: func(*http.Request) { throttled.Add(1) }})
	rsa := issuer.Key(t, "RS256")
	// A known kid, a wrong signature: each costs a verification.
	forged := tamper(t, authtest.Sign(t, rsa, issuer.Claims("alice")), "mallory")
	mallory, bob := from("127.0.0.1"), from("127.0.0.2")
	verified := issuer.Token(t, "RS256", "alice")

	type step struct {
		name    string
		client  *http.Client
		token   string
		advance time.Duration
		status  int
		retry   string
	}
	steps := []step{
		{name: "a valid token is verified and cached, not charged", client: mallory, token: verified, status: 200},
	}
	for range bound {
		steps = append(steps, step{name: "a failure within the bound", client: mallory, token: forged, status: 401})
	}
	steps = append(steps,
		step{name: "past the bound", client: mallory, token: forged, status: 429, retry: "20"},
		step{name: "past the bound, a token never seen", client: mallory, token: issuer.Token(t, "ES256", "carol"), status: 429, retry: "20"},
		step{name: "past the bound, a token verified before", client: mallory, token: verified, status: 200},
		step{name: "another address, a valid token", client: bob, token: issuer.Token(t, "ES256", "bob"), status: 200},
		step{name: "another address, a failure", client: bob, token: forged, status: 401},
		step{name: "part of the wait", client: mallory, token: forged, advance: 10 * time.Second, status: 429, retry: "10"},
		step{name: "one failure refilled", client: mallory, token: forged, advance: 10 * time.Second, status: 401},
		step{name: "and spent", client: mallory, token: forged, status: 429, retry: "20"},
	)
	failures := 0
	for i, s := range steps {
		now.Advance(s.advance)
		status, retry := f.send(t, s.client, s.token)
		if status != s.status || retry != s.retry {
			t.Fatalf("step %d (%s): status %d, Retry-After %q; want %d, %q", i, s.name, status, retry, s.status, s.retry)
		}
		if status == 401 {
			failures++
		}
	}
	// A refusal for the bound checks nothing: it is no authentication
	// failure, and says so to OnThrottled only.
	if got := len(f.reasons); got != failures {
		t.Errorf("%d authentication failures reported, want %d (the 401s)", got, failures)
	}
	if got := throttled.Load(); got != 4 {
		t.Errorf("OnThrottled told of %d requests, want 4", got)
	}

	// Requests at once from a third address cannot pass the bound
	// together: each is charged before its check.
	eve := from("127.0.0.3")
	const many = 20
	statuses := make(chan int, many)
	var wg sync.WaitGroup
	for range many {
		wg.Go(func() {
			status, _, err := f.trySend(eve, forged)
			if err != nil {
				t.Error(err)
			}
			statuses <- status
		})
	}
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	if counts[401] != bound || counts[429] != many-bound {
		t.Errorf("%d requests at once: %v, want %d times 401 and the rest 429", many, counts, bound)
	}
}
