package mcpserver

import (
	"bytes"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/serve/auth"
)

var (
	alice = auth.User{Issuer: "https://issuer", Subject: "alice"}
	bob   = auth.User{Issuer: "https://issuer", Subject: "bob"}
)

// keepOrFail keeps n bytes for user and returns the URI.
func keepOrFail(t *testing.T, k *keptResults, user auth.User, n int) string {
	t.Helper()
	uri, _, err := k.keep(user, bytes.Repeat([]byte("x"), n))
	if err != nil {
		t.Fatalf("keep %d bytes for %s: %v", n, user.Subject, err)
	}
	return uri
}

// readError is the error of user's read of uri ("" when it is read).
func readError(k *keptResults, user auth.User, uri string) string {
	if _, err := k.read(user, uri); err != nil {
		return err.Error()
	}
	return ""
}

const notYours = "no result of yours is kept under this URI"

// TestKeptResultsBounds: the kept results stay within their bounds per
// user (count, bytes) and across users (bytes, the host's budget), the
// oldest evicted first; an evicted result's user is told so, anyone else
// is told only that no result of theirs is there.
func TestKeptResultsBounds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    LargeResults
		budget int64 // 0: none
		keep   func(t *testing.T, k *keptResults) (gone, kept []string)
	}{
		{name: "per user count", cfg: LargeResults{PerUser: 2}, keep: func(t *testing.T, k *keptResults) ([]string, []string) {
			a1, a2, b1, a3 := keepOrFail(t, k, alice, 10), keepOrFail(t, k, alice, 10), keepOrFail(t, k, bob, 10), keepOrFail(t, k, alice, 10)
			return []string{a1}, []string{a2, a3, b1}
		}},
		{name: "per user bytes", cfg: LargeResults{BytesPerUser: 100}, keep: func(t *testing.T, k *keptResults) ([]string, []string) {
			a1, a2, b1, a3 := keepOrFail(t, k, alice, 40), keepOrFail(t, k, alice, 40), keepOrFail(t, k, bob, 90), keepOrFail(t, k, alice, 40)
			return []string{a1}, []string{a2, a3, b1}
		}},
		{name: "bytes across users", cfg: LargeResults{BytesTotal: 100}, keep: func(t *testing.T, k *keptResults) ([]string, []string) {
			a1, b1, a2, b2 := keepOrFail(t, k, alice, 30), keepOrFail(t, k, bob, 30), keepOrFail(t, k, alice, 30), keepOrFail(t, k, bob, 30)
			return []string{a1}, []string{b1, a2, b2}
		}},
		{name: "count across users", keep: func(t *testing.T, k *keptResults) ([]string, []string) {
			k.maxCount = 2
			a1, b1, a2 := keepOrFail(t, k, alice, 10), keepOrFail(t, k, bob, 10), keepOrFail(t, k, alice, 10)
			if k.all.Len() != 2 {
				t.Errorf("%d results kept, want 2", k.all.Len())
			}
			return []string{a1}, []string{b1, a2}
		}},
		{name: "the host's budget, at most half of it", budget: 200, keep: func(t *testing.T, k *keptResults) ([]string, []string) {
			a1, b1, a2 := keepOrFail(t, k, alice, 50), keepOrFail(t, k, bob, 50), keepOrFail(t, k, alice, 50)
			if held := k.budget.Held(); held != 100 {
				t.Errorf("the budget holds %d bytes, want 100", held)
			}
			return []string{a1}, []string{b1, a2}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var budget *limit.Bytes
			if tc.budget > 0 {
				var err error
				if budget, err = limit.NewBytes("max_host_bytes_total", tc.budget); err != nil {
					t.Fatal(err)
				}
			}
			k := newKeptResults(tc.cfg, budget)
			gone, kept := tc.keep(t, k)
			owner := func(uri string) auth.User {
				if r := k.byURI[uri]; r != nil {
					return r.user
				}
				return k.gone[uri].user
			}
			for _, uri := range kept {
				if msg := readError(k, owner(uri), uri); msg != "" {
					t.Errorf("%s: %s", uri, msg)
				}
			}
			for _, uri := range gone {
				if msg := readError(k, owner(uri), uri); !strings.Contains(msg, "no longer kept (evicted") {
					t.Errorf("the owner's read of an evicted result: %q", msg)
				}
			}
			for _, uri := range append(gone, kept...) {
				other := bob
				if owner(uri) == bob {
					other = alice
				}
				if msg := readError(k, other, uri); msg != notYours {
					t.Errorf("another user's read: %q", msg)
				}
			}
			var total int64
			for user, n := range k.bytes {
				total += n
				if n > k.cfg.BytesPerUser || int64(k.users[user].Len()) > int64(k.cfg.PerUser) {
					t.Errorf("%s keeps %d results, %d bytes", user.Subject, k.users[user].Len(), n)
				}
			}
			if total != k.total || total > k.cfg.BytesTotal {
				t.Errorf("%d bytes kept, %d counted, %d at most", total, k.total, k.cfg.BytesTotal)
			}
		})
	}
}

// TestKeptResultsRefused: a result larger than a user may keep is refused
// saying which setting bounds it, and nothing is evicted for it.
func TestKeptResultsRefused(t *testing.T) {
	k := newKeptResults(LargeResults{BytesPerUser: 100}, nil)
	a1 := keepOrFail(t, k, alice, 60)
	_, _, err := k.keep(alice, bytes.Repeat([]byte("x"), 101))
	if err == nil || !strings.Contains(err.Error(), "results_kept_bytes_per_user") {
		t.Fatalf("101 bytes of a user's 100: %v", err)
	}
	if msg := readError(k, alice, a1); msg != "" {
		t.Errorf("a refused result evicted another: %s", msg)
	}
}

// TestKeptResultsExpire: a result is gone once its time is up, its room in
// the host's budget given back, and its user is told it expired.
func TestKeptResultsExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		budget, _ := limit.NewBytes("max_host_bytes_total", 1000)
		k := newKeptResults(LargeResults{KeepFor: time.Hour}, budget)
		uri := keepOrFail(t, k, alice, 100)
		time.Sleep(time.Hour - time.Second)
		if msg := readError(k, alice, uri); msg != "" {
			t.Fatalf("before its hour: %s", msg)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if msg := readError(k, alice, uri); !strings.Contains(msg, "expired") {
			t.Errorf("after its hour: %q", msg)
		}
		if msg := readError(k, bob, uri); msg != notYours {
			t.Errorf("bob, after its hour: %q", msg)
		}
		if held := budget.Held(); held != 0 {
			t.Errorf("the budget still holds %d bytes", held)
		}
	})
}

// TestIndentPrefix: a value's first lines are indented from its beginning
// alone, strings kept whole, however large the value.
func TestIndentPrefix(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":[1,{"b":"x,{y}"}],"c":{}}`, "{\n  \"a\": [\n    1,\n    {\n      \"b\": \"x,{y}\"\n    }\n  ],\n  \"c\": {}\n}"},
		{`[]`, `[]`},
		{`"a\"b"`, `"a\"b"`},
	} {
		if got := indentPrefix([]byte(tc.in), 1000); got != tc.want {
			t.Errorf("indentPrefix(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
	huge := "[" + strings.Repeat(`"x",`, 1<<20) + `"x"]`
	if got := indentPrefix([]byte(huge), 100); len(got) > 110 {
		t.Errorf("a prefix of %d bytes for a bound of 100", len(got))
	}
}

// FuzzIndentPrefix: any text, JSON or not, is indented within its bound
// without a panic.
func FuzzIndentPrefix(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":null}]}`), 50)
	f.Add([]byte(`}}]]"\`), 10)
	f.Fuzz(func(t *testing.T, v []byte, limit int) {
		limit = max(limit%4096, 0)
		if got := indentPrefix(v, limit); len(got) > limit+64 {
			t.Errorf("%d bytes for a bound of %d", len(got), limit)
		}
	})
}
