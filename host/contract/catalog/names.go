package catalog

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// luauKeywords cannot be field names in sdk.<api>.<name> syntax.
var luauKeywords = map[string]bool{
	"and": true, "break": true, "do": true, "else": true, "elseif": true, "end": true,
	"false": true, "for": true, "function": true, "if": true, "in": true, "local": true,
	"nil": true, "not": true, "or": true, "repeat": true, "return": true, "then": true,
	"true": true, "until": true, "while": true, "continue": true,
}

// IsIdentifier reports whether s is a Luau identifier that is not a
// keyword: what an API name must be.
func IsIdentifier(s string) bool {
	if s == "" || luauKeywords[s] {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// SnakeCase turns an operationId (or "GET /pets/{petId}") into a Luau
// identifier in snake_case: listPets → list_pets, repos/get-content →
// repos_get_content, getHTTPResponse → get_http_response. Characters
// outside identifiers become separators; a leading digit gets "op_" and a
// Luau keyword a trailing "_".
func SnakeCase(s string) string {
	var b strings.Builder
	rs := []rune(s)
	sep := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
			b.WriteByte('_')
		}
	}
	for i, r := range rs {
		switch {
		case r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if unicode.IsUpper(r) {
				prevLower := i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
				nextLower := i > 0 && i+1 < len(rs) && unicode.IsUpper(rs[i-1]) && unicode.IsLower(rs[i+1])
				if prevLower || nextLower {
					sep()
				}
				r = unicode.ToLower(r)
			}
			b.WriteRune(r)
		default:
			sep()
		}
	}
	out := strings.Trim(b.String(), "_")
	if out == "" {
		return "op"
	}
	if out[0] >= '0' && out[0] <= '9' {
		out = "op_" + out
	}
	if luauKeywords[out] {
		out += "_"
	}
	return out
}

// OperationName is the base name of an operation: its operationId in
// snake_case, else its method and path (GET /pets/{petId} → get_pets_pet_id).
func OperationName(operationID, method, path string) string {
	if strings.TrimSpace(operationID) != "" {
		return SnakeCase(operationID)
	}
	return SnakeCase(strings.ToLower(method) + " " + path)
}

// Uniquify renames duplicates among names in place, in order: the second
// "x" becomes "x_2", the third "x_3" (skipping names already taken).
func Uniquify(names []string) {
	taken := make(map[string]bool, len(names))
	for _, n := range names {
		taken[n] = true
	}
	seen := make(map[string]int, len(names))
	for i, n := range names {
		seen[n]++
		if seen[n] == 1 {
			continue
		}
		for k := seen[n]; ; k++ {
			candidate := n + "_" + strconv.Itoa(k)
			if !taken[candidate] {
				names[i] = candidate
				taken[candidate] = true
				seen[n] = k
				break
			}
		}
	}
}

// Link marks the functions that are also sdk.<name> (Flat: an OpenAPI
// operation no other API defines) and checks the names of the catalog: API names must
// be distinct identifiers, and no API may be named like a flat function
// (sdk.<name> would mean both).
func (c *Catalog) Link() error {
	apis := map[string]bool{}
	for _, a := range c.APIs {
		if !IsIdentifier(a.Name) {
			return fmt.Errorf("API name %q is not a Luau identifier (letters, digits and _, not starting with a digit, not a keyword)", a.Name)
		}
		if apis[a.Name] {
			return fmt.Errorf("two APIs are named %q", a.Name)
		}
		apis[a.Name] = true
	}
	// Only OpenAPI operations are flat: an MCP tool is always
	// sdk.<server>.<tool>.
	owners := map[string]int{}
	for _, a := range c.APIs {
		for _, f := range a.Functions {
			if f.Kind != MCP {
				owners[f.Name]++
			}
		}
	}
	var clashes []string
	for _, a := range c.APIs {
		for _, f := range a.Functions {
			f.Flat = f.Kind != MCP && owners[f.Name] == 1
			if f.Flat && apis[f.Name] {
				clashes = append(clashes, fmt.Sprintf("API %q has the same name as the function sdk.%s.%s (also sdk.%s)", f.Name, a.Name, f.Name, f.Name))
			}
		}
	}
	if len(clashes) > 0 {
		sort.Strings(clashes)
		return fmt.Errorf("name clash: %s; rename the API", strings.Join(clashes, "; "))
	}
	return nil
}

// Closest returns the candidate nearest to name by edit distance (ignoring
// case and _/- differences), or "" when none is close enough to be a
// plausible misspelling.
func Closest(name string, candidates []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
	}
	n := norm(name)
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(n, norm(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(1, len([]rune(n))/3)
	if bestD < 0 || bestD > limit {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of neighbours count one each.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	rows := [3][]int{make([]int, len(rb)+1), make([]int, len(rb)+1), make([]int, len(rb)+1)}
	for j := range rows[1] {
		rows[1][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		pp, prev, cur := rows[0], rows[1], rows[2]
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], pp[j-2]+1)
			}
		}
		rows[0], rows[1], rows[2] = prev, cur, pp
	}
	return rows[1][len(rb)]
}
