package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/testfile"
)

func TestLintSection(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		name    string
		text    string
		flags   LintFlags
		disable []string
		io      bool
		strict  bool
		types   bool
	}{
		{name: "defaults", io: true},
		{name: "the section", text: "[lint]\ndisable = [\"unused_local\"]\nio = false\nstrict = true\n",
			disable: []string{"unused_local"}, io: false, strict: true},
		{name: "io follows [io] enabled", text: "[io]\nenabled = false\n", io: false},
		{name: "[lint] io wins over [io]", text: "[io]\nenabled = false\n[lint]\nio = true\n", io: true},
		{name: "flags win", text: "[lint]\ndisable = [\"unused_local\"]\nio = false\n",
			flags:   LintFlags{Disable: []string{"shadowed_local"}, IO: &yes, Strict: true},
			disable: []string{"unused_local", "shadowed_local"}, io: true, strict: true},
		{name: "--no-io", flags: LintFlags{IO: &no}, io: false},
		{name: "[lint] types", text: "[lint]\ntypes = true\n", io: true, types: true},
		{name: "--types", flags: LintFlags{Types: true}, io: true, types: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &File{}
			if c.text != "" {
				f = loadText(t, c.text)
			}
			s := ResolveLint(f, c.flags)
			if !slices.Equal(s.Disable, c.disable) || s.IO != c.io || s.Strict != c.strict || s.Types != c.types {
				t.Errorf("got %+v, want disable %v io %v strict %v types %v", s, c.disable, c.io, c.strict, c.types)
			}
		})
	}
}

// TestLintSectionErrors: the section's shape is config's to check; its
// rule names are lint's (host/app TestLoadConfigLintRules).
func TestLintSectionErrors(t *testing.T) {
	_, err := Load(testfile.Temp(t, "toolscript.toml", "[lint]\nrules = 1\n"))
	if err == nil || !strings.Contains(err.Error(), "unknown key lint.rules") {
		t.Fatalf("error = %v, want unknown key lint.rules", err)
	}
}
