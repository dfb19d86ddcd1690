package suggest

import "testing"

func TestClosest(t *testing.T) {
	candidates := []string{"timeout", "memory_limit_mb", "max_log_lines", "json", "io-dir"}
	cases := []struct {
		name, want string
		ok         bool
	}{
		{"timout", "timeout", true},
		{"timeot", "timeout", true},
		{"jsn", "json", true},
		{"JSON", "json", true},
		{"iodir", "io-dir", true},
		{"zzzzzzzz", "", false},
		{"x", "", false},
		{"timeout", "timeout", true},
	}
	for _, c := range cases {
		got, ok := Closest(c.name, candidates)
		if got != c.want || ok != c.ok {
			t.Errorf("Closest(%q) = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func FuzzClosest(f *testing.F) {
	f.Add("timout", "timeout")
	f.Fuzz(func(t *testing.T, name, candidate string) {
		if got, ok := Closest(name, []string{candidate}); ok && got != candidate {
			t.Fatalf("Closest(%q) = %q, not the only candidate", name, got)
		}
	})
}
