package catalog

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Override sets the configured classification of a's functions: those
// named in safe are safe, those in unsafe unsafe, whatever their HTTP
// method or annotations say (Function.Configured), and every other
// function's is cleared. A name is an operation's operationId or the
// function's sdk name (they differ when the operationId is not in
// snake_case: "issues/create" is sdk.gh.issues_create), an MCP tool's
// name or its sdk name. It returns the names that match no function of a,
// in the order given; a function named in both lists (by the same name or
// two of its names) is an error, and so is a name two functions could
// mean (one's tool name or operationId, another's sdk name: "wipe_all"
// when the tools wipe-all and wipe_all are sdk.x.wipe_all and
// sdk.x.wipe_all_2), which names them and a name only each has.
func (a *API) Override(safe, unsafe []string) (unknown []string, err error) {
	for _, f := range a.Functions {
		f.Configured = nil
	}
	if len(safe) == 0 && len(unsafe) == 0 {
		return nil, nil
	}
	byName := map[string][]*Function{}
	for _, f := range a.Functions {
		for _, n := range f.names() {
			byName[n] = append(byName[n], f)
		}
	}
	given := map[*Function]string{} // the name each classified function was given as, with its list
	for _, list := range []struct {
		key   string
		names []string
		safe  bool
	}{{"safe", safe, true}, {"unsafe", unsafe, false}} {
		for _, n := range list.names {
			fs := byName[n]
			switch {
			case len(fs) == 0:
				unknown = append(unknown, n)
				continue
			case len(fs) > 1:
				return nil, a.ambiguous(list.key, n, fs, byName)
			}
			f := fs[0]
			if f.Configured != nil && *f.Configured != list.safe {
				return nil, fmt.Errorf("%s is both safe (as %q) and unsafe (as %q): name it in one list", f.label(), given[f], n)
			}
			v := list.safe
			f.Configured = &v
			given[f] = n
		}
	}
	return unknown, nil
}

// ambiguous is the error of a name in list (safe or unsafe) that each of
// fs could mean: it names each function, and a name only it has.
func (a *API) ambiguous(list, name string, fs []*Function, byName map[string][]*Function) error {
	meant := make([]string, len(fs))
	var own []string
	for i, f := range fs {
		what := "the operation " + f.OperationID
		switch {
		case f.Tool != "":
			what = "the tool " + f.Tool
		case f.OperationID == "":
			what = "the operation " + f.Method + " " + f.Path
		}
		meant[i] = fmt.Sprintf("%s (sdk.%s.%s)", what, a.Name, f.Name)
		for _, n := range f.names() {
			if len(byName[n]) == 1 {
				own = append(own, strconv.Quote(n))
				break
			}
		}
	}
	msg := fmt.Sprintf("%q in %s could mean %s", name, list, orList(meant))
	if len(own) > 0 {
		msg += fmt.Sprintf(": name the one you mean by a name only it has (%s)", orList(own))
	}
	return errors.New(msg)
}

// orList joins items as "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// names are the names configuration may give f by: its sdk name, and its
// operationId or tool name.
func (f *Function) names() []string {
	out := []string{f.Name}
	for _, n := range []string{f.OperationID, f.Tool} {
		if n != "" && n != f.Name {
			out = append(out, n)
		}
	}
	return out
}

// label names f in messages: its sdk name, with its operationId or tool
// name when that differs.
func (f *Function) label() string {
	names := f.names()
	if len(names) == 1 {
		return "function " + names[0]
	}
	return fmt.Sprintf("function %s (%s)", names[0], names[1])
}

// NamesOf are the names configuration may give a's functions by (their
// sdk names, operationIds and tool names), sorted, without repeats.
func (a *API) NamesOf() []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range a.Functions {
		for _, n := range f.names() {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// CloseMatches returns up to n candidates nearest to name by edit distance
// (ignoring case and _/- differences), nearest first, among those close
// enough to be plausible misspellings (as Closest judges), or that contain
// name or are contained in it.
func CloseMatches(name string, candidates []string, n int) []string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "", "/", "", ".", "").Replace(strings.ToLower(s))
	}
	want := norm(name)
	limit := max(1, len([]rune(want))/3)
	type match struct {
		name string
		d    int
	}
	var matches []match
	for _, c := range candidates {
		nc := norm(c)
		d := editDistance(want, nc)
		if d > limit && (want == "" || !strings.Contains(nc, want)) && (nc == "" || !strings.Contains(want, nc)) {
			continue
		}
		matches = append(matches, match{c, d})
	}
	sort.SliceStable(matches, func(i, j int) bool {
		if matches[i].d != matches[j].d {
			return matches[i].d < matches[j].d
		}
		return matches[i].name < matches[j].name
	})
	var out []string
	for _, m := range matches {
		if len(out) == n {
			break
		}
		out = append(out, m.name)
	}
	return out
}
