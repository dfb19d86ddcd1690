package lint

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/toolscript/toolscript/host/platform/termtext"
	"github.com/toolscript/toolscript/host/runtime/luau"
)

// Function is what lint --effects knows of an sdk function
// (Options.Functions).
type Function struct {
	// Unsafe is whether calling it can change something (host/contract/effects'
	// classification, the configuration's safe and unsafe included).
	Unsafe bool
	// Does is what a call does, for a person: "POST /repos/{owner}/{repo}/issues",
	// "MCP tool write_file".
	Does string
	// Decided is what the configuration's [[policy]] rules decide of its
	// calls, as far as the function tells (`rule "no deletes": deny`,
	// `rule "x" depends on arguments`, `[effects] default: ask`); empty
	// when there are no rules.
	Decided string
}

// Reach is one thing a script names that can change the world.
type Reach struct {
	// What is as a person reads it: the function's qualified name
	// (sdk.gh.issues_create), the io call (os.remove, io.open(..., "w")),
	// or how the script reaches something unnamed (sdk[...]).
	What string `json:"what"`
	// Does is an sdk function's call (Function.Does), and Decided what
	// the rules decide of it (Function.Decided).
	Does    string `json:"does,omitempty"`
	Decided string `json:"decided,omitempty"`
	// Line and Column are where the script first names it (1-based,
	// columns in characters).
	Line   int `json:"line"`
	Column int `json:"column"`
}

// Effects are what one script can change, as far as its literal names
// tell (lint --effects).
type Effects struct {
	File string `json:"file"`
	// Checked is false when the script does not parse: nothing is known.
	Checked bool `json:"checked"`
	// Unsafe are the unsafe sdk functions the script names (called, or
	// taken as a value), each once, in the order first named; Safe the
	// safe ones.
	Unsafe []Reach `json:"unsafe"`
	Safe   []Reach `json:"safe"`
	// IO are its io calls that write (io.open for writing, io.edit,
	// os.remove, os.rename, file.save), each once.
	IO []Reach `json:"io"`
	// Unnamed are the places it reaches the sdk or io without naming
	// what: sdk[name], an API's table as a value, io.open with a mode that
	// is not a literal.
	Unnamed []Reach `json:"unnamed"`
}

// Changes reports whether the script can change anything lint sees, or
// reaches something it cannot name.
func (e *Effects) Changes() bool {
	return len(e.Unsafe) > 0 || len(e.IO) > 0 || len(e.Unnamed) > 0
}

// isEffect reports whether a record of the module is one of lint
// --effects' rather than a diagnostic.
func isEffect(rule string) bool {
	return rule == luau.EffectsSDK || rule == luau.EffectsIO || rule == luau.EffectsUnnamed
}

// effectsOf gathers a script's effects records.
func effectsOf(src Source, diags []luau.LintDiagnostic, lookup func(string) (Function, bool)) Effects {
	out := Effects{File: src.Name, Checked: true, Unsafe: []Reach{}, Safe: []Reach{}, IO: []Reach{}, Unnamed: []Reach{}}
	seen := map[string]bool{}
	for _, d := range diags {
		if d.Rule == luau.RuleSyntax {
			out.Checked = false
		}
		if !isEffect(d.Rule) || seen[d.Rule+"\x00"+d.Message] {
			continue
		}
		seen[d.Rule+"\x00"+d.Message] = true
		r := Reach{What: d.Message, Line: d.Line, Column: d.Column}
		switch d.Rule {
		case luau.EffectsIO:
			out.IO = append(out.IO, r)
		case luau.EffectsUnnamed:
			out.Unnamed = append(out.Unnamed, r)
		case luau.EffectsSDK:
			f, ok := Function{Unsafe: true}, false
			if lookup != nil {
				f, ok = lookup(d.Message)
			}
			if !ok {
				// Not in the catalog lint was given: it may change anything.
				f = Function{Unsafe: true}
			}
			r.Does, r.Decided = f.Does, f.Decided
			if f.Unsafe {
				out.Unsafe = append(out.Unsafe, r)
			} else {
				out.Safe = append(out.Safe, r)
			}
		}
	}
	if !out.Checked {
		out.Unsafe, out.Safe, out.IO, out.Unnamed = []Reach{}, []Reach{}, []Reach{}, []Reach{}
	}
	return out
}

// writeEffectsText writes one block per script, each field escaped as one
// line by host/platform/termtext (a script's name and what it names are its own):
//
//	a.luau: can change the world through sdk.gh.issues_create (POST /repos/{owner}/{repo}/issues; rule "x": ask), ...
//	a.luau: writes files: io.open(..., "w") (3:12), os.remove (9:1)
//	a.luau: calls it cannot name: sdk[...] (4:7)
//	b.luau: no unsafe sdk calls
func writeEffectsText(w *bufio.Writer, effects []Effects) {
	for _, e := range effects {
		file := termtext.Line(e.File)
		if !e.Checked {
			fmt.Fprintf(w, "%s: not checked: the script does not parse\n", file)
			continue
		}
		if len(e.Unsafe) == 0 {
			fmt.Fprintf(w, "%s: no unsafe sdk calls\n", file)
		} else {
			list := make([]string, len(e.Unsafe))
			for i, r := range e.Unsafe {
				list[i] = termtext.Line(r.What)
				var about []string
				for _, t := range []string{r.Does, r.Decided} {
					if t != "" {
						about = append(about, termtext.Line(t))
					}
				}
				if len(about) > 0 {
					list[i] += " (" + strings.Join(about, "; ") + ")"
				}
			}
			fmt.Fprintf(w, "%s: can change the world through %s\n", file, strings.Join(list, ", "))
		}
		if len(e.IO) > 0 {
			fmt.Fprintf(w, "%s: writes files: %s\n", file, placed(e.IO))
		}
		if len(e.Unnamed) > 0 {
			fmt.Fprintf(w, "%s: calls it cannot name: %s\n", file, placed(e.Unnamed))
		}
	}
}

// placed lists reaches with their positions: os.remove (9:1), ...
func placed(reaches []Reach) string {
	list := make([]string, len(reaches))
	for i, r := range reaches {
		list[i] = fmt.Sprintf("%s (%d:%d)", termtext.Line(r.What), r.Line, r.Column)
	}
	return strings.Join(list, ", ")
}
