package sdkdocs

import (
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// While an MCP server's tools are not listed, a name that is not found is
// never "no function named" as long as a server that may have it is
// starting, and answers about the whole sdk say which servers they lack.
func TestPendingServers(t *testing.T) {
	listed := &catalog.API{Name: "files", Kind: catalog.MCP, Functions: []*catalog.Function{{Name: "read_file", Kind: catalog.MCP, Tool: "read_file"}}}
	starting := &catalog.API{Name: "calc", Kind: catalog.MCP, State: "starting", Description: "The MCP server calc is starting."}
	down := &catalog.API{Name: "mem", Kind: catalog.MCP, State: "down", Description: "The MCP server mem could not be started (failed to start: exit status 1)."}
	cases := []struct {
		name    string
		apis    []*catalog.API
		lookup  string
		err     string // the lookup's error
		notWant string
		note    string
	}{
		{"all listed", []*catalog.API{listed}, "add", `no function named "add" (search_docs finds functions by what they do)`, "", ""},
		{"one starting", []*catalog.API{listed, starting}, "add",
			`"add" is not listed yet: not listed are the tools of the MCP server calc, which is still starting (they are listed once it answers); ask again shortly`,
			"no function named",
			"-- not listed: the tools of the MCP server calc, which is still starting (they are listed once it answers)"},
		{"qualified, starting", []*catalog.API{listed, starting}, "sdk.calc.add", `"add" is not listed yet: not listed are the tools of the MCP server calc`, "no function named", "-- not listed: the tools of the MCP server calc"},
		{"qualified elsewhere", []*catalog.API{listed, starting}, "sdk.files.add", `no function named "add" in API files`, "not listed", "-- not listed: the tools of the MCP server calc"},
		{"one down", []*catalog.API{listed, down}, "add",
			`no function named "add"; not listed are the tools of the MCP server mem, which is down: The MCP server mem could not be started (failed to start: exit status 1).`, "",
			"-- not listed: the tools of the MCP server mem, which is down"},
		{"starting and down", []*catalog.API{starting, down}, "add",
			"the MCP server calc, which is still starting (they are listed once it answers); the tools of the MCP server mem, which is down", "no function named",
			"-- not listed: the tools of the MCP server calc, which is still starting (they are listed once it answers); the tools of the MCP server mem, which is down"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cat := &catalog.Catalog{APIs: c.apis}
			if err := cat.Link(); err != nil {
				t.Fatal(err)
			}
			d := New(cat)
			_, err := d.FunctionDocs(c.lookup)
			if err == nil || !strings.Contains(err.Error(), c.err) || (c.notWant != "" && strings.Contains(err.Error(), c.notWant)) {
				t.Errorf("FunctionDocs(%q) = %v\nwant %q", c.lookup, err, c.err)
			}
			if note := d.PendingNote(); !strings.HasPrefix(note, c.note) || (c.note == "") != (note == "") {
				t.Errorf("PendingNote() = %q, want %q", note, c.note)
			}
		})
	}
}
