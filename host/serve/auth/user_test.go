package auth_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/serve/auth"
)

func TestDirName(t *testing.T) {
	long := strings.Repeat("x", 200)
	tests := []struct {
		user auth.User
		want string
	}{
		{auth.User{Issuer: "https://auth.example.com", Subject: "alice"}, "u.alice.https_3a_2f_2fauth_2eexample_2ecom"},
		{auth.User{Issuer: "https://auth.example.com", Subject: "Alice"}, "u._41lice.https_3a_2f_2fauth_2eexample_2ecom"},
		{auth.User{Issuer: "i", Subject: "../.."}, "u._2e_2e_2f_2e_2e.i"},
		{auth.User{Issuer: "i", Subject: "a.b"}, "u.a_2eb.i"},
		{auth.User{Issuer: "i", Subject: "a_2eb"}, "u.a_5f2eb.i"},
		{auth.User{Issuer: "i", Subject: "auth0|5f7c-9"}, "u.auth0_7c5f7c-9.i"},
		{auth.User{Issuer: "i", Subject: ""}, "u..i"},
		{auth.User{Issuer: "i", Subject: long}, "h."},
	}
	for _, tt := range tests {
		got := tt.user.DirName()
		if tt.want == "h." {
			// The hashed form: its shape, not a value copied from the code.
			if len(got) != 66 || !strings.HasPrefix(got, "h.") || strings.Trim(got[2:], "0123456789abcdef") != "" {
				t.Errorf("%+v: DirName %q, want h. and 64 hex digits", tt.user, got)
			}
			continue
		}
		if got != tt.want {
			t.Errorf("%+v: DirName %q, want %q", tt.user, got, tt.want)
		}
	}
}

// TestDirNamesOnDisk: names differing in case only, or by bytes a file
// system might fold, get directories of their own.
func TestDirNamesOnDisk(t *testing.T) {
	dir := t.TempDir()
	subs := []string{"alice", "Alice", "ALICE", "al ice", "al\u0130ce", "alice.", "alice/", "alice\x00", strings.Repeat("a", 300), strings.Repeat("a", 301)}
	for _, sub := range subs {
		u := auth.User{Issuer: "https://auth.example.com", Subject: sub}
		path := filepath.Join(dir, u.DirName())
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatalf("%q: %v", sub, err)
		}
		if err := os.WriteFile(filepath.Join(path, "owner"), []byte(sub), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(subs) {
		t.Fatalf("%d directories for %d users", len(entries), len(subs))
	}
}

func FuzzDirName(f *testing.F) {
	f.Add("https://auth.example.com", "alice", "https://auth.example.com", "Alice")
	f.Add("a", "b.c", "a.b", "c")
	f.Add("i", "_41", "i", "A")
	f.Add("i", strings.Repeat("x", 200), "i", strings.Repeat("x", 201))
	f.Add("", "", "", ".")
	f.Fuzz(func(t *testing.T, iss1, sub1, iss2, sub2 string) {
		a, b := auth.User{Issuer: iss1, Subject: sub1}, auth.User{Issuer: iss2, Subject: sub2}
		na, nb := a.DirName(), b.DirName()
		if a != b && na == nb {
			t.Fatalf("%+v and %+v share the directory %q", a, b, na)
		}
		if a == b && na != nb {
			t.Fatalf("%+v has two names", a)
		}
		for _, n := range []string{na, nb} {
			if len(n) > auth.MaxDirNameBytes || n == "" || n[0] == '.' || filepath.Base(n) != n || n != filepath.Clean(n) {
				t.Fatalf("unsafe name %q", n)
			}
			for _, c := range []byte(n) {
				if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
					t.Fatalf("name %q holds byte %q", n, c)
				}
			}
		}
		// A readable name decodes back to its user.
		if u, ok := auth.ParseDirName(na); ok && u != a {
			t.Fatalf("%q decodes to %+v, not %+v", na, u, a)
		} else if !ok && !strings.HasPrefix(na, "h.") {
			t.Fatalf("readable name %q does not decode", na)
		}
	})
}

func FuzzParseDirName(f *testing.F) {
	f.Add("u.alice.i")
	f.Add("u._2d.i")
	f.Add("u._4.i")
	f.Add("h.00")
	f.Fuzz(func(t *testing.T, name string) {
		u, ok := auth.ParseDirName(name)
		if ok && u.DirName() != name {
			t.Fatalf("%q parses to %+v, whose name is %q", name, u, u.DirName())
		}
	})
}

func TestUserContext(t *testing.T) {
	ctx := context.Background()
	if _, ok := auth.UserFrom(ctx); ok {
		t.Fatal("a user in an empty context")
	}
	want := auth.User{Issuer: "i", Subject: "s"}
	if got, ok := auth.UserFrom(auth.WithUser(ctx, want)); !ok || got != want {
		t.Fatalf("UserFrom: %+v %v", got, ok)
	}
}
