package hosted

import (
	"strings"
	"testing"
)

// FuzzNormalizeOrigin: normalizing never panics; a normalized origin is
// its own normal form, has a scheme and a host and nothing after them, and
// an allowed origin is allowed in its normal form.
func FuzzNormalizeOrigin(f *testing.F) {
	for _, seed := range []string{"https://App.Example.com:443", "http://[::1]:8080/", "null", "https://a@b", "http://x:80", "https://%zz", "HTTP://LOCALHOST:3000"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, origin string) {
		n, ok := normalizeOrigin(origin)
		if !ok {
			return
		}
		again, ok := normalizeOrigin(n)
		if !ok || again != n {
			t.Fatalf("%q normalizes to %q, which normalizes to %q (%v)", origin, n, again, ok)
		}
		rest, found := strings.CutPrefix(n, "https://")
		if !found {
			rest, found = strings.CutPrefix(n, "http://")
		}
		if !found || rest == "" || strings.ContainsAny(rest, "/?#@") {
			t.Fatalf("%q normalizes to %q", origin, n)
		}
		o, err := ParseOrigins([]string{origin})
		if err != nil || !o.Allowed(n) || !o.Allowed(origin) {
			t.Fatalf("%q: ParseOrigins %v, allowed in normal form %v", origin, err, err == nil && o.Allowed(n))
		}
	})
}
