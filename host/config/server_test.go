package config

import (
	"testing"
	"time"
)

func TestServerSection(t *testing.T) {
	f := loadText(t, "[server]\nmax_concurrent = 2\nmax_timeout = \"90s\"\nmax_script_bytes = 4096\n")
	s, err := ResolveServer(f, ServerFlags{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (ServerSettings{MaxConcurrent: 2, MaxTimeout: 90 * time.Second, MaxScriptBytes: 4096}); s != want {
		t.Errorf("from the file: %+v, want %+v", s, want)
	}
	s, err = ResolveServer(f, ServerFlags{MaxConcurrent: 8, MaxTimeout: time.Minute, MaxScriptBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	if want := (ServerSettings{MaxConcurrent: 8, MaxTimeout: time.Minute, MaxScriptBytes: 10}); s != want {
		t.Errorf("flags over the file: %+v, want %+v", s, want)
	}
	s, err = ResolveServer(nil, ServerFlags{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (ServerSettings{}); s != want {
		t.Errorf("nothing set: %+v, want all zero (the MCP server's defaults)", s)
	}
}

// TestLargeResultsSection: max_inline_result and the bounds of the
// results kept reach the server's settings; unset, they are zero (the MCP
// server's defaults).
func TestLargeResultsSection(t *testing.T) {
	f := loadText(t, "[server]\nmax_inline_result = 1000\nresults_kept_per_user = 3\n"+
		"results_kept_bytes_per_user = 4096\nresults_kept_bytes_total = 8192\nresults_kept_for = \"10m\"\n")
	s, err := ResolveServer(f, ServerFlags{})
	if err != nil {
		t.Fatal(err)
	}
	want := LargeResults{MaxInline: 1000, PerUser: 3, BytesPerUser: 4096, BytesTotal: 8192, KeepFor: 10 * time.Minute}
	if s.LargeResults != want {
		t.Errorf("from the file: %+v, want %+v", s.LargeResults, want)
	}
}

func TestServerSectionErrors(t *testing.T) {
	for _, flags := range []ServerFlags{{MaxConcurrent: -1}, {MaxTimeout: -time.Second}, {MaxScriptBytes: -2}} {
		if _, err := ResolveServer(nil, flags); err == nil {
			t.Errorf("ResolveServer accepted %+v", flags)
		}
	}
}
