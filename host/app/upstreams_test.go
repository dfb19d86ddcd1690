package app

import (
	"bytes"
	"slices"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

func TestPendingUpstreams(t *testing.T) {
	// A script waits for the servers not listed yet that it names as a
	// word, and for no other.
	cat := &catalog.Catalog{APIs: []*catalog.API{
		{Name: "gh", Kind: catalog.OpenAPI},
		{Name: "files", Kind: catalog.MCP, State: "starting"},
		{Name: "mem", Kind: catalog.MCP, State: "down"},
		{Name: "py", Kind: catalog.MCP},
	}}
	for _, tc := range []struct {
		source string
		want   []string
	}{
		{"return 1", nil},
		{"return sdk.files.read_file({ path = 'a' })", []string{"files"}},
		{`return sdk["files"].read_file({})`, []string{"files"}},
		{"local s = sdk.mem; return s.create_entities({}), sdk.files", []string{"files", "mem"}},
		{"return sdk.py.say_hello({}), sdk.gh.repos_get()", nil},
		{"local myfiles, files_2, memo = 1, 2, 3", nil},
		{"files", []string{"files"}},
	} {
		if got := pendingUpstreams(cat, []byte(tc.source)); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.source, got, tc.want)
		}
	}
}

func FuzzHasWord(f *testing.F) {
	f.Add([]byte("sdk.files.x"), "files")
	f.Add([]byte("filesfiles files"), "files")
	f.Fuzz(func(t *testing.T, s []byte, word string) {
		got := hasWord(s, word)
		if got && (word == "" || !bytes.Contains(s, []byte(word))) {
			t.Fatalf("hasWord(%q, %q) without the word", s, word)
		}
	})
}
