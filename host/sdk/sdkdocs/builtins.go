package sdkdocs

import (
	"fmt"
	"strings"
)

// Builtin finds a built-in by the name a script uses ("json.encode",
// "parallel"); a sandbox without io has no io built-ins.
func (d *Docs) Builtin(name string) (Builtin, bool) {
	if b := d.builtin(name); b != nil {
		return *b, true
	}
	return Builtin{}, false
}

func (d *Docs) builtin(name string) *Builtin {
	name = strings.TrimSpace(name)
	name = strings.TrimSuffix(name, "()")
	for i := range Builtins {
		b := &Builtins[i]
		if b.Name() == name && !(b.IO && d.noIO) {
			return b
		}
	}
	return nil
}

// docs is a built-in's get_function_docs: its signature and what it does.
// The MCP server answers with the built-in's full page instead.
func (b Builtin) docs() string {
	return fmt.Sprintf("```luau\n%s\n```\n\n%s\n\nA global of the sandbox, not part of sdk; the toolscript://docs/ resources document the sandbox.\n",
		b.Signature, b.Summary)
}

// isBuiltinName reports whether name is a built-in's, io's included.
func isBuiltinName(name string) bool {
	name = strings.TrimSuffix(strings.TrimSpace(name), "()")
	for _, b := range Builtins {
		if b.Name() == name {
			return true
		}
	}
	return false
}
