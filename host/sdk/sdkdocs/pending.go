package sdkdocs

import (
	"fmt"
	"strings"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// What the docs say of the upstream MCP servers whose tools are not listed
// yet (catalog.API.State): one still starting, or down. An answer without
// their tools says so, and a name that is not found is never "no function
// named" while a server that may have it is starting.

// pending are the MCP servers among apis (all of the sdk when in is nil,
// else in alone) whose tools are not listed, starting ones first.
func (d *Docs) pending(in *catalog.API) (starting, down []*catalog.API) {
	for _, a := range d.cat.APIs {
		if in != nil && a != in {
			continue
		}
		switch {
		case a.State == "":
		case a.State == "down":
			down = append(down, a)
		default:
			starting = append(starting, a)
		}
	}
	return starting, down
}

// PendingNote is one line naming the MCP servers whose tools an answer
// about the whole sdk lacks, and why; "" when there are none.
func (d *Docs) PendingNote() string {
	starting, down := d.pending(nil)
	if len(starting)+len(down) == 0 {
		return ""
	}
	return "-- not listed: " + pendingText(starting, down)
}

// pendingText says which servers are starting and which are down.
func pendingText(starting, down []*catalog.API) string {
	var parts []string
	for _, a := range starting {
		parts = append(parts, fmt.Sprintf("the tools of the MCP server %s, which is still starting (they are listed once it answers)", a.Name))
	}
	for _, a := range down {
		parts = append(parts, fmt.Sprintf("the tools of the MCP server %s, which is down: %s", a.Name, oneLine(a.Description, 400)))
	}
	return strings.Join(parts, "; ")
}

// pendingLookup is the error of a function name not found (msg says so)
// when MCP servers that may have it are not listed: while one is
// starting, that the name is not listed yet; else msg and the servers
// that are down. It is nil when every server is listed.
func (d *Docs) pendingLookup(name, msg string, in *catalog.API) error {
	starting, down := d.pending(in)
	switch {
	case len(starting) > 0:
		return fmt.Errorf("%q is not listed yet: not listed are %s; ask again shortly", name, pendingText(starting, down))
	case len(down) > 0:
		return fmt.Errorf("%s; not listed are %s", msg, pendingText(nil, down))
	}
	return nil
}
