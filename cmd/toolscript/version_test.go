package main

import (
	"runtime/debug"
	"testing"
)

func TestResolveVersion(t *testing.T) {
	build := func(v string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/toolscript/toolscript", Version: v}}
	}
	cases := []struct {
		name    string
		ldflags string
		info    *debug.BuildInfo
		ok      bool
		want    string
	}{
		{"go install @version", "", build("v1.4.0"), true, "v1.4.0"},
		{"pseudo-version from a checkout", "", build("v0.0.0-20260101120000-abcdef123456+dirty"), true, "v0.0.0-20260101120000-abcdef123456+dirty"},
		{"-ldflags wins", "v2.0.0-rc1", build("v1.4.0"), true, "v2.0.0-rc1"},
		{"go build without VCS information", "", build("(devel)"), true, "dev"},
		{"no version recorded", "", build(""), true, "dev"},
		{"no build info", "", nil, false, "dev"},
	}
	for _, c := range cases {
		if got := resolveVersion(c.ldflags, c.info, c.ok); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
