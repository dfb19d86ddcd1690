package auth

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestTokenCache(t *testing.T) {
	now := time.Now()
	alice := User{Issuer: "i", Subject: "alice"}
	tests := []struct {
		name    string
		expires time.Time
		at      time.Time
		hit     bool
	}{
		{name: "fresh", expires: now.Add(time.Hour), at: now.Add(time.Minute), hit: true},
		{name: "past its expiry", expires: now.Add(time.Minute), at: now.Add(time.Minute), hit: false},
		{name: "past the ttl", expires: now.Add(time.Hour), at: now.Add(5 * time.Minute), hit: false},
		{name: "just before the ttl", expires: now.Add(time.Hour), at: now.Add(5*time.Minute - time.Nanosecond), hit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTokenCache(10, 1<<20, 1<<20, 5*time.Minute)
			c.put("token", alice, Claims{"role": "admin"}, tt.expires, now)
			u, claims, ok := c.get("token", tt.at)
			if ok != tt.hit || (ok && (u != alice || claims["role"] != "admin")) {
				t.Errorf("get: %+v %v %v, want hit %v", u, claims, ok, tt.hit)
			}
			if _, _, ok := c.get("token2", now); ok {
				t.Error("another token hits")
			}
		})
	}
}

func TestTokenCacheBounded(t *testing.T) {
	now := time.Now()
	c := newTokenCache(100, 1<<30, 1<<30, time.Minute)
	for i := range 1000 {
		c.put(fmt.Sprint("token", i), User{Subject: fmt.Sprint(i)}, nil, now.Add(time.Hour), now)
		if n := c.len(); n > 100 {
			t.Fatalf("%d entries in a cache of 100", n)
		}
	}
	// The last token put is always there.
	if u, _, ok := c.get("token999", now); !ok || u.Subject != "999" {
		t.Errorf("the newest token: %+v %v", u, ok)
	}
	// Expired entries go first.
	c = newTokenCache(4, 1<<30, 1<<30, time.Minute)
	c.put("old", User{}, nil, now.Add(time.Second), now)
	for i := range 3 {
		c.put(fmt.Sprint("new", i), User{}, nil, now.Add(time.Hour), now)
	}
	c.put("newest", User{}, nil, now.Add(time.Hour), now.Add(2*time.Second))
	for _, tok := range []string{"new0", "new1", "new2", "newest"} {
		if _, _, ok := c.get(tok, now.Add(2*time.Second)); !ok {
			t.Errorf("%s was evicted before an expired entry", tok)
		}
	}
	if c.len() != 4 {
		t.Errorf("%d entries, want 4", c.len())
	}
	if newTokenCache(-1, 1<<30, 1<<30, time.Minute) != nil {
		t.Error("a cache of negative size")
	}
}

// TestWeighCoversDecodedClaims: the weight of a token's claims is never
// less than what encoding/json's decoding of them holds in memory, for
// the shapes that hold the most a byte (measured on the heap, many copies
// kept at once).
func TestWeighCoversDecodedClaims(t *testing.T) {
	const size = 12000 // the payload of a 16 KB token
	repeat := func(item string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", size/(len(item)+1)), ",") + "]"
	}
	object := func(members int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range members {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"%x":1`, i)
		}
		return b.String() + "}"
	}
	shapes := map[string]string{
		"empty objects":         `{"a":` + repeat("{}") + `}`,
		"objects of one member": `{"a":` + repeat(`{"a":1}`) + `}`,
		"nested objects":        strings.Repeat(`{"":`, size/5) + "1" + strings.Repeat("}", size/5),
		"empty arrays":          `{"a":` + repeat("[]") + `}`,
		"nested arrays":         `{"a":` + strings.Repeat("[", size/2) + strings.Repeat("]", size/2) + `}`,
		"empty strings":         `{"a":` + repeat(`""`) + `}`,
		"short strings":         `{"a":` + repeat(`"a"`) + `}`,
		"numbers":               `{"a":` + repeat("1") + `}`,
		"literals":              `{"a":` + repeat("true") + `}`,
		"members":               object(size / 8),
		"9 members":             object(9),
		"57 members":            object(57),
		"17 numbers":            `{"a":[` + strings.TrimSuffix(strings.Repeat("1,", 17), ",") + `]}`,
		"common": `{"iss":"https://login.example.com/v2.0","sub":"AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ",` +
			`"aud":"https://toolscript.example.com","exp":1700000000,"iat":1699996400,"scope":"openid scripts:run",` +
			`"name":"Alice Example","email":"alice@example.com","groups":["a1b2c3d4-0000-0000-0000-000000000001"]}`,
	}
	for name, payload := range shapes {
		t.Run(name, func(t *testing.T) {
			// Enough copies that what else the process allocates meanwhile
			// is lost in the noise: about 20 MB weighed.
			var probe Claims
			if err := json.Unmarshal([]byte(payload), &probe); err != nil {
				t.Fatal(err)
			}
			weight := weigh(map[string]any(probe))
			copies := max(20, int((20<<20)/weight))
			// What else the process allocates meanwhile only adds to a
			// measure: the least of three is the closest.
			held := int64(math.MaxInt64)
			for range 3 {
				held = min(held, heldPerCopy(t, payload, copies))
			}
			t.Logf("%d bytes of JSON: %d held, weighed %d", len(payload), held, weight)
			if weight < held {
				t.Errorf("%d bytes of JSON hold %d bytes decoded, weighed %d", len(payload), held, weight)
			}
		})
	}
}

// heldPerCopy is the heap that each of copies decodings of payload holds.
func heldPerCopy(t *testing.T, payload string, copies int) int64 {
	t.Helper()
	kept := make([]Claims, copies)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range kept {
		if err := json.Unmarshal([]byte(payload), &kept[i]); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / int64(copies)
}
