package sdkdocs

import (
	"sort"
	"strings"
	"unicode"

	"github.com/toolscript/toolscript/host/catalog"
)

// entry is one function in the search index: its texts, tokenised once.
type entry struct {
	api    *catalog.API
	fn     *catalog.Function
	fields [numFields][]string
}

// The searched fields, strongest first.
const (
	fieldName = iota
	fieldTags
	fieldSummary
	fieldParams
	fieldPath
	fieldDescription
	numFields
)

// weights of a query word found in each field (whole word; a prefix
// counts half).
var weights = [numFields]float64{8, 4, 3, 2, 2, 1}

func (d *Docs) buildIndex() {
	for _, api := range d.cat.APIs {
		for _, f := range api.Functions {
			e := entry{api: api, fn: f}
			e.fields[fieldName] = tokens(f.Name + " " + f.OperationID + " " + f.Tool)
			e.fields[fieldTags] = tokens(strings.Join(f.Tags, " ") + " " + api.Name)
			e.fields[fieldSummary] = tokens(f.Summary)
			var params []string
			for _, p := range f.Params {
				params = append(params, p.Name, p.Description)
			}
			e.fields[fieldParams] = tokens(strings.Join(params, " "))
			e.fields[fieldPath] = tokens(f.Method + " " + f.Path)
			e.fields[fieldDescription] = tokens(f.Description)
			d.index = append(d.index, e)
		}
	}
}

// tokens splits text into lower-case words, camelCase and snake_case
// apart.
func tokens(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			if w := stem(strings.ToLower(string(cur))); !stopWords[w] {
				out = append(out, w)
			}
			cur = cur[:0]
		}
	}
	prev := rune(0)
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && unicode.IsLower(prev) {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// contains reports whether words occur in toks one after another.
func contains(toks, words []string) bool {
	for i := 0; i+len(words) <= len(toks); i++ {
		match := true
		for j, w := range words {
			if toks[i+j] != w {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// stopWords carry no meaning in a query.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "of": true, "for": true, "to": true, "in": true,
	"on": true, "by": true, "with": true, "and": true, "or": true, "my": true, "all": true,
}

// stem makes plurals singular, roughly: "issues" and "issue" are one word.
func stem(w string) string {
	if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		return w[:len(w)-1]
	}
	return w
}

// Hit is one result of search_docs.
type Hit struct {
	Name    string  `json:"name"`
	API     string  `json:"api"`
	Summary string  `json:"summary,omitempty"`
	Score   float64 `json:"score"`
}

// DefaultSearchLimit is how many hits Search returns by default.
const DefaultSearchLimit = 20

// Search ranks functions by the words of query found in their names,
// tags, summaries, parameters, paths and descriptions; functions matching
// more of the words come first.
func (d *Docs) Search(query string, limit int) []Hit {
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	words := tokens(query)
	if len(words) == 0 {
		return nil
	}
	var hits []Hit
	for _, e := range d.index {
		score, matched := 0.0, 0
		for _, w := range words {
			best := 0.0
			for field, toks := range e.fields {
				for _, t := range toks {
					s := 0.0
					switch {
					case t == w:
						s = weights[field]
					case len(w) >= 3 && strings.HasPrefix(t, w):
						s = weights[field] / 2
					case len(w) >= 4 && strings.HasPrefix(w, t) && len(t) >= 4:
						s = weights[field] / 3 // "pets" finds "pet"
					}
					best = max(best, s)
				}
			}
			if best > 0 {
				matched++
				score += best
			}
		}
		if matched == 0 {
			continue
		}
		score *= float64(matched) / float64(len(words))
		// The query as a phrase of the summary or the name says most.
		if len(words) > 1 && (contains(e.fields[fieldSummary], words) || contains(e.fields[fieldName], words)) {
			score += 10
			if len(e.fields[fieldSummary]) == len(words) && contains(e.fields[fieldSummary], words) {
				score += 10 // the summary is the query
			}
		}
		// Among equals, the function whose name is mostly the query wins:
		// "create issue" prefers issues_create to orgs_create_issue_field.
		if name := e.fields[fieldName]; len(name) > 0 {
			hit := 0
			for _, t := range name {
				for _, w := range words {
					if t == w {
						hit++
						break
					}
				}
			}
			score += 2 * float64(hit) / float64(len(name))
		}
		hits = append(hits, Hit{Name: callName(e.api, e.fn), API: e.api.Name, Summary: summary(e.fn), Score: float64(int(score*100)) / 100})
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}
