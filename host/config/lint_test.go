package config

import (
	"slices"
	"strings"
	"testing"
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &File{}
			if c.text != "" {
				var err error
				if f, err = Load(writeConfig(t, c.text)); err != nil {
					t.Fatal(err)
				}
			}
			s, err := ResolveLint(f, c.flags)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Options.Disable, c.disable) || s.Options.IO != c.io || s.Strict != c.strict {
				t.Errorf("got %+v, want disable %v io %v strict %v", s, c.disable, c.io, c.strict)
			}
		})
	}
}

func TestLintSectionErrors(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"unknown rule", "[lint]\ndisable = [\"nope\"]\n", `lint.disable: lint: unknown rule "nope"`},
		{"syntax", "[lint]\ndisable = [\"syntax\"]\n", "cannot be disabled"},
		{"unknown key", "[lint]\nrules = 1\n", "unknown key lint.rules"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
	if _, err := ResolveLint(nil, LintFlags{Disable: []string{"nope"}}); err == nil {
		t.Error("ResolveLint accepted an unknown rule")
	}
}
