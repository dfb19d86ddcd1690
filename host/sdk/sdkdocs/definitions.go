package sdkdocs

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// Builtin is one of toolscript's own globals.
type Builtin struct {
	// Signature is as its docs write it: "json.encode(value: any): string".
	Signature string
	// Summary says what it does, in one line.
	Summary string
	// IO is set for the io library's functions, which a sandbox without
	// io lacks.
	IO bool
}

// Name is how a script calls it: "json.encode", "parallel".
func (b Builtin) Name() string { return b.Signature[:strings.IndexByte(b.Signature, '(')] }

// Builtins are toolscript's own globals, the one list of them: the
// definitions file, search_docs and get_function_docs read it, and a test
// keeps it equal to the signatures the MCP server's docs pages give
// (host/serve/mcpserver/docs). Luau's standard libraries are known to every Luau
// tool and are not repeated.
var Builtins = []Builtin{
	{"json.encode(value: any): string", "Encodes a Luau value as JSON text (json.null is null, json.object makes an empty table an object).", false},
	{"json.decode(text: string): any", "Decodes JSON text into Luau values (null becomes json.null, integers stay integers).", false},
	{"json.object(t: {[string]: any}?): {[string]: any}", "Marks a table to be encoded as a JSON object even when empty.", false},
	{"progress(done: number, total: number?, message: string?): ()", "Reports the script's progress to the client as MCP progress notifications.", false},
	{"parallel(fns: {() -> any}, limit: number?): {any}", "Runs functions concurrently (their sdk calls at once, at most limit in flight) and returns their first results in order.", false},
	{"io.open(path: string, mode: string?): File", "Opens a file of the io directory to read or write it; returns a File with read, write, lines, seek and close.", true},
	{"io.lines(path: string): () -> string?", "Iterates over the lines of a file of the io directory.", true},
	{"io.list(path: string?): {string}", "Lists the entries of a directory of the io directory.", true},
	{"io.type(value: any): (\"file\" | \"closed file\")?", "Tells whether a value is an open file, a closed file or neither.", true},
	{"io.stat(path: string): ({kind: \"file\" | \"directory\" | \"link\" | \"other\", size: number, modified: number}?, string?)", "Describes a file, directory or link of the io directory (kind, size, modified), or returns nil and a message when there is none.", true},
	{"io.glob(pattern: string): {string}", "Finds the paths of the io directory that match a glob (*, ?, [...], ** for any directories), sorted.", true},
	{"io.grep(pattern: string, path: string?, options: {glob: string?}?): { {path: string, line: number, text: string} }", "Searches the files under a path of the io directory for lines matching a regular expression (RE2), optionally only files matching a glob.", true},
	{"io.edit(path: string, old: string, new: string, all: boolean?): number", "Replaces the first (or every) occurrence of a text in a file of the io directory and returns how many; raises when there is none.", true},
	{"os.remove(path: string): boolean", "Deletes a file of the io directory.", true},
	{"os.rename(from: string, to: string): boolean", "Moves or renames a file of the io directory.", true},
	{"file.save(name: string, content: string): ()", "Deprecated (use io.open): saves content as a file of the io directory, reported in files_touched.", true},
}

// osStandard are Luau's own os functions: declaring os for os.remove
// replaces Luau's declaration, so the definitions repeat them.
var osStandard = []string{
	"\tclock: () -> number,",
	"\tdate: (format: string?, time: number?) -> any,",
	"\tdifftime: (t2: number, t1: number?) -> number,",
	"\ttime: (t: {[string]: any}?) -> number,",
}

// sdkResponseType is the type of an sdk call's second value, the response
// table (luau-build/shim/sdk.cpp): dry_run is true in a dry run's made-up
// responses and absent otherwise.
const sdkResponseType = "type SdkResponse = { status: number, headers: {[string]: string}, dry_run: boolean? }"

// fileType is the type of an open file, as io.open's docs give it.
const fileType = `type File = {
	read: (self: File, ...("a" | "l" | "L" | "n" | number)) -> ...(string | number)?,
	write: (self: File, ...(string | number)) -> File,
	lines: (self: File) -> () -> string?,
	seek: (self: File, whence: ("set" | "cur" | "end")?, offset: number?) -> number,
	flush: (self: File) -> File,
	close: (self: File) -> boolean,
}`

// splitSignature cuts "io.open(path: string): File" into the table "io",
// the name "open", the parameters and the result.
func splitSignature(sig string) (table, name, params, result string) {
	open := strings.IndexByte(sig, '(')
	qualified := sig[:open]
	depth, end := 0, open
	for i := open; i < len(sig); i++ {
		switch sig[i] {
		case '(':
			depth++
		case ')':
			depth--
		}
		if depth == 0 {
			end = i
			break
		}
	}
	params = sig[open+1 : end]
	result = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(sig[end+1:]), ":"))
	if t, n, ok := strings.Cut(qualified, "."); ok {
		return t, n, params, result
	}
	return "", qualified, params, result
}

// Definitions is a Luau definitions file (the format luau-lsp's
// --definitions and its luau-lsp.types.definitionFiles setting load): the
// sandbox's globals beyond Luau's standard library, the sdk's response and
// error types, every named schema of every API as a type, and the sdk
// table itself.
func (d *Docs) Definitions() string { return d.DefinitionsLoose(nil) }

// APINames are the names of the APIs the definitions declare, in their
// order: the parts DefinitionsLoose can declare loosely.
func (d *Docs) APINames() []string {
	names := make([]string, len(d.cat.APIs))
	for i, api := range d.cat.APIs {
		names[i] = api.Name
	}
	return names
}

// DefinitionsLoose is Definitions with the APIs loose names declared
// loosely: each one's table (and its functions that are also sdk.<name>)
// typed any, its types left out, so that a script's calls to it are
// unchecked while the rest stays checked. It is what the type checker
// loads when an API's definitions do not load (an upstream server's
// schemas are not the operator's).
func (d *Docs) DefinitionsLoose(loose []string) string {
	var b strings.Builder
	b.WriteString("--!strict\n-- Luau definitions for toolscript scripts: the sandbox's globals and the\n")
	b.WriteString("-- generated sdk. Generated by `toolscript sdk types`; load it in luau-lsp\n")
	b.WriteString("-- with --definitions (or luau-lsp.types.definitionFiles).\n\n")
	b.WriteString(fileType + "\n\n")
	tables := map[string][]string{}
	var order []string
	for _, bi := range Builtins {
		table, name, params, result := splitSignature(bi.Signature)
		if table == "" {
			fmt.Fprintf(&b, "declare function %s(%s): %s\n", name, params, result)
			continue
		}
		if _, ok := tables[table]; !ok {
			order = append(order, table)
		}
		tables[table] = append(tables[table], fmt.Sprintf("\t%s: (%s) -> %s,", name, params, result))
	}
	tables["json"] = append(tables["json"], "\tnull: any,")
	tables["os"] = append(osStandard, tables["os"]...)
	for _, t := range order {
		fmt.Fprintf(&b, "declare %s: {\n%s\n}\n", t, strings.Join(tables[t], "\n"))
	}
	b.WriteString("\n" + sdkResponseType + "\n")
	b.WriteString("type SdkError = { status: number, message: string, body: any, headers: {[string]: string}? }\n")

	var sdk []string
	var flat []string
	taken := map[string]bool{}
	for _, api := range d.cat.APIs {
		names := typeNames(api, api.Name+"_", taken)
		if slices.Contains(loose, api.Name) {
			sdk, flat = looseAPI(api, sdk, flat)
			continue
		}
		t := d.typerOf(api, names)
		t.closedArgs = true
		if len(api.Schemas) > 0 {
			// One line: a title's line break would end the comment and
			// write the rest into the definitions.
			fmt.Fprintf(&b, "\n-- sdk.%s: %s\n", api.Name, oneLine(api.Title, 200))
		}
		recursive := selfRecursive(api)
		for _, n := range slices.Sorted(maps.Keys(api.Schemas)) {
			if recursive[n] {
				fmt.Fprintf(&b, "type %s = any -- itself with no table in between\n", names[n])
				continue
			}
			fmt.Fprintf(&b, "type %s = %s\n", names[n], t.typ(api.Schemas[n], 0))
		}
		var fields []string
		for _, f := range api.Functions {
			fn := fmt.Sprintf("(%s) -> (%s, SdkResponse)", strings.Join(arguments(t, f), ", "), resultType(t, f))
			note := learnedNote(t, f)
			fields = append(fields, note+fmt.Sprintf("\t\t%s: %s,", key(f.Name), fn))
			if f.Flat {
				flat = append(flat, strings.ReplaceAll(note, "\t\t", "\t")+fmt.Sprintf("\t%s: %s,", key(f.Name), fn))
			}
		}
		sdk = append(sdk, fmt.Sprintf("\t%s: {\n%s\n\t},", key(api.Name), strings.Join(fields, "\n")))
	}
	b.WriteString("\ndeclare sdk: {\n")
	for _, s := range append(sdk, flat...) {
		b.WriteString(s + "\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// looseAPI adds to sdk and flat api's table and its functions that are
// also sdk.<name>, each typed any.
func looseAPI(api *catalog.API, sdk, flat []string) ([]string, []string) {
	names := sdkNames(api)
	sdk = append(sdk, fmt.Sprintf("\t%s: any, -- its definitions do not load: its calls are unchecked", key(names[0])))
	for _, n := range names[1:] {
		flat = append(flat, fmt.Sprintf("\t%s: any,", key(n)))
	}
	return sdk, flat
}

// SDKNames are the fields of the sdk table the API named api declares:
// its own table first, then its functions that are also sdk.<name>; nil
// for an API there is none of.
func (d *Docs) SDKNames(api string) []string {
	for _, a := range d.cat.APIs {
		if a.Name == api {
			return sdkNames(a)
		}
	}
	return nil
}

func sdkNames(api *catalog.API) []string {
	names := []string{api.Name}
	for _, f := range api.Functions {
		if f.Flat {
			names = append(names, f.Name)
		}
	}
	return names
}

// learnedNote is the comment line put before a function whose result type
// was learned from recorded calls; "" for the others.
func learnedNote(t *typer, f *catalog.Function) string {
	if mark := learnedMark(t, f); mark != "" {
		return "\t\t-- " + strings.TrimSuffix(strings.TrimPrefix(mark, " ("), ")") + ", not declared\n"
	}
	return ""
}

// learnedMark is what a listing adds to the summary of a function whose
// result type was learned: " (result type learned from 12 recorded
// calls)"; "" for the others.
func learnedMark(t *typer, f *catalog.Function) string {
	if declaredResultType(t, f) != "any" {
		return ""
	}
	r, ok := t.learnedResult(f)
	if !ok {
		return ""
	}
	return " (result type learned from " + recordedCalls(r.Calls) + ")"
}

// recordedCalls is "1 recorded call" or "12 recorded calls".
func recordedCalls(n int) string {
	if n == 1 {
		return "1 recorded call"
	}
	return fmt.Sprintf("%d recorded calls", n)
}
