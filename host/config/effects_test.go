package config

import (
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/testfile"
)

func TestEffectsRecordDir(t *testing.T) {
	env := func(k string) string { return map[string]string{"HOME": "/home/u"}[k] }
	cases := []struct {
		text, want, err string
	}{
		{"", "", ""},
		{"[effects]\nrecord_dir = \"traces\"\n", "traces", ""},
		{"[effects]\nrecord_dir = \"~/traces\"\n", "/home/u/traces", ""},
		{"[effects]\nrecord_dir = \"a/../b\"\n", "", "effects.record_dir"},
		{"[effects]\nrecord = \"x\"\n", "", "unknown key effects.record"},
		{"[effects]\nrecord_max_bytes = 0\n", "", "effects.record_max_bytes: must be positive"},
		{"[effects]\nrecord_max_bytes_per_user = -1\n", "", "effects.record_max_bytes_per_user: must be positive"},
	}
	for _, c := range cases {
		f, err := Load(testfile.Temp(t, "toolscript.toml", c.text))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.text, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		if got, err := f.RecordDir(env); err != nil || got != c.want {
			t.Errorf("%q: record dir %q (%v), want %q", c.text, got, err, c.want)
		}
	}
}

// TestDigestLeavesCredentialsOut: the digest follows the configuration
// but not its secrets.
func TestDigestLeavesCredentialsOut(t *testing.T) {
	a := loadText(t, "[apis.gh]\nspec = \"gh.json\"\nauth = \"secret-one\"\n")
	b := loadText(t, "[apis.gh]\nspec = \"gh.json\"\nauth = \"secret-two\"\n")
	c := loadText(t, "[apis.gh]\nspec = \"other.json\"\nauth = \"secret-one\"\n")
	if a.Digest() != b.Digest() {
		t.Error("the digest depends on a credential")
	}
	if a.Digest() == c.Digest() {
		t.Error("the digest does not depend on the spec")
	}
	if len(a.Digest()) != 64 || (*File)(nil).Digest() == "" {
		t.Error("not a sha256")
	}
}

// TestWithoutCredentials: a replay resolves the sdk with its credential
// variables unset.
func TestWithoutCredentials(t *testing.T) {
	f := loadText(t, "[apis.gh]\nspec = \"gh.json\"\nauth_env = \"UNSET_TOKEN\"\n")
	none := func(string) string { return "" }
	if _, err := ResolveSDK(f, SDKFlags{}, none); err == nil || !strings.Contains(err.Error(), "UNSET_TOKEN") {
		t.Fatalf("a real run without the variable: %v", err)
	}
	cfg, err := ResolveSDK(f, SDKFlags{WithoutCredentials: true, Auth: []string{"gh:ALSO_UNSET"}}, none)
	if err != nil || cfg.APIs[0].Auth != nil {
		t.Fatalf("without credentials: %v %+v", err, cfg.APIs)
	}
}
