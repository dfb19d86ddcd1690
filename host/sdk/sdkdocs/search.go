package sdkdocs

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/kljensen/snowball/english"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// The search ranks with BM25F: each function is a document of weighted
// fields, its words split apart (snake_case, camelCase, dots), lower-cased,
// stop words dropped and stemmed with the Snowball English stemmer, so
// that "issues", "issue" and "issuing" are one word. A query's words are
// also looked for through a small table of what models say for what APIs
// name ("remember" finds "memory" and "observations").

// The searched fields.
const (
	fieldName = iota
	fieldSummary
	fieldTags
	fieldParams
	fieldPath
	fieldDescription
	numFields
)

// weights of the fields, and their length normalisation (BM25F's b).
var (
	weights   = [numFields]float64{5, 3, 1.5, 1.5, 1, 1}
	normalise = [numFields]float64{0.5, 0.6, 0.3, 0.5, 0.5, 0.75}
)

// BM25's saturation, and how much a word found through a synonym counts.
const (
	k1            = 1.2
	synonymWeight = 0.4
)

// Bounds on a query: longer is an error, more words are ignored.
const (
	MaxQueryBytes = 1000
	maxQueryWords = 32
	// maxHits caps how many ranked results a query has (all pages).
	maxHits = 500
	// maxFieldText caps the text of one field that is indexed.
	maxFieldText = 8000
)

// index is the inverted index of a catalog and the built-ins.
type index struct {
	stems    stemCache // while building
	docs     []indexDoc
	postings map[string][]posting
	avgLen   [numFields]float64
}

// indexDoc is one searchable function or built-in.
type indexDoc struct {
	api     *catalog.API
	fn      *catalog.Function
	builtin *Builtin
	length  [numFields]int
	// name are the words of the name field.
	name []string
}

type posting struct {
	doc int32
	tf  [numFields]uint16
}

// texts are the fields of a document, before tokenising.
type texts [numFields]string

func buildIndex(cat *catalog.Catalog) *index {
	ix := &index{postings: map[string][]posting{}, stems: stemCache{}}
	for _, api := range cat.APIs {
		for _, f := range api.Functions {
			ix.add(indexDoc{api: api, fn: f}, functionTexts(api, f))
		}
	}
	for i := range Builtins {
		b := &Builtins[i]
		table, _, _ := strings.Cut(b.Name(), ".")
		ix.add(indexDoc{builtin: b}, texts{
			fieldName:    b.Name(),
			fieldSummary: b.Summary,
			fieldTags:    "builtin global sandbox " + table,
			fieldParams:  b.Signature,
		})
	}
	ix.stems = nil
	var total [numFields]float64
	for _, d := range ix.docs {
		for f, n := range d.length {
			total[f] += float64(n)
		}
	}
	for f := range total {
		ix.avgLen[f] = max(total[f]/float64(max(len(ix.docs), 1)), 1)
	}
	return ix
}

// functionTexts are what is searched of a function: its names, summary,
// tags and API, parameter names, path, and descriptions (of the function,
// its parameters and an MCP tool's arguments).
func functionTexts(api *catalog.API, f *catalog.Function) texts {
	var t texts
	t[fieldName] = f.Name
	if f.Tool != "" && upstreamIdentifier(f.Tool) != f.Name {
		t[fieldName] += " " + f.Tool
	}
	t[fieldSummary] = f.Summary
	t[fieldTags] = strings.Join(f.Tags, " ") + " " + api.Name + " " + api.Title
	var params, descs []string
	for _, p := range f.Params {
		params = append(params, p.Name)
		descs = append(descs, p.Description)
	}
	if in := api.Resolve(f.InputSchema); in != nil {
		for _, p := range in.Properties {
			params = append(params, p.Name)
			if ps := api.Resolve(p.Schema); ps != nil {
				descs = append(descs, ps.Description)
				if items := api.Resolve(ps.Items); items != nil {
					for _, ip := range items.Properties {
						params = append(params, ip.Name)
						if ips := api.Resolve(ip.Schema); ips != nil {
							descs = append(descs, ips.Description)
						}
					}
				}
			}
		}
	}
	t[fieldParams] = strings.Join(params, " ")
	t[fieldPath] = f.Path
	t[fieldDescription] = f.Description + " " + strings.Join(descs, " ")
	return t
}

// upstreamIdentifier approximates how an MCP tool's name became a function
// name, to avoid indexing the same words twice.
func upstreamIdentifier(tool string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return '_'
	}, tool)
}

func (ix *index) add(d indexDoc, t texts) {
	id := int32(len(ix.docs))
	counts := map[string]*posting{}
	var order []string
	for f, text := range t {
		if len(text) > maxFieldText {
			text = cutRunes(text, maxFieldText)
		}
		toks := tokensWith(ix.stems, text)
		d.length[f] = len(toks)
		if f == fieldName {
			d.name = toks
		}
		for _, w := range toks {
			p := counts[w]
			if p == nil {
				p = &posting{doc: id}
				counts[w] = p
				order = append(order, w)
			}
			if p.tf[f] < math.MaxUint16 {
				p.tf[f]++
			}
		}
	}
	for _, w := range order {
		ix.postings[w] = append(ix.postings[w], *counts[w])
	}
	ix.docs = append(ix.docs, d)
}

// maxWord is the longest word indexed or searched: longer ones (hashes,
// base64) are nobody's query.
const maxWord = 40

// stemCache remembers stems while an index is built (words repeat); nil
// stems without remembering.
type stemCache map[string]string

func (c stemCache) stem(w string) string {
	if c == nil {
		return english.Stem(w, false)
	}
	s, ok := c[w]
	if !ok {
		s = english.Stem(w, false)
		c[w] = s
	}
	return s
}

// tokens splits text into stemmed lower-case words: snake_case, camelCase,
// dotted and slashed names apart, stop words dropped.
func tokens(s string) []string { return tokensWith(nil, s) }

func tokensWith(stems stemCache, s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 && len(cur) <= maxWord {
			w := strings.ToLower(string(cur))
			if !english.IsStopWord(w) && !extraStopWords[w] {
				out = append(out, stems.stem(w))
			}
		}
		cur = cur[:0]
	}
	prev := rune(0)
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)) {
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

// extraStopWords are words of requests that say nothing of the function
// wanted.
var extraStopWords = map[string]bool{
	"please": true, "want": true, "need": true, "using": true, "via": true, "e": true, "g": true,
	"sdk": true, "api": true, "function": true, "way": true, "can": true, "let": true, "lets": true,
}

// synonyms maps a stemmed word of a query to stemmed words functions use
// for the same thing: what a model says against what an API names.
var synonyms = stemmedSynonyms(map[string][]string{
	"remember":       {"memory", "observation", "add", "create", "store", "save"},
	"memorize":       {"memory", "observation", "add", "create", "store"},
	"recall":         {"memory", "search", "read", "open"},
	"forget":         {"delete", "remove", "memory"},
	"fact":           {"observation", "entity", "knowledge"},
	"note":           {"observation", "comment"},
	"person":         {"entity", "user", "people", "member"},
	"people":         {"entity", "user", "member"},
	"someone":        {"entity", "user"},
	"know":           {"knowledge", "memory"},
	"link":           {"relation"},
	"connect":        {"relation"},
	"find":           {"search", "get", "list"},
	"look":           {"search", "get"},
	"lookup":         {"search", "get"},
	"fetch":          {"get", "read", "download"},
	"retrieve":       {"get", "read"},
	"show":           {"get", "list", "read"},
	"see":            {"get", "list", "read"},
	"make":           {"create"},
	"add":            {"create"},
	"publish":        {"create", "release"},
	"set":            {"create", "update"},
	"close":          {"update", "state"},
	"reopen":         {"update", "state"},
	"approve":        {"review"},
	"assign":         {"assignee"},
	"new":            {"create"},
	"open":           {"create", "read"},
	"start":          {"create", "run", "trigger"},
	"remove":         {"delete"},
	"erase":          {"delete"},
	"drop":           {"delete"},
	"change":         {"update", "edit", "modify"},
	"edit":           {"update", "modify"},
	"modify":         {"update", "edit"},
	"rename":         {"move", "update"},
	"folder":         {"directory"},
	"directory":      {"folder"},
	"repo":           {"repository"},
	"pr":             {"pull"},
	"ticket":         {"issue"},
	"bug":            {"issue"},
	"say":            {"echo"},
	"repeat":         {"echo"},
	"sum":            {"add"},
	"picture":        {"image"},
	"photo":          {"image"},
	"contents":       {"content", "read"},
	"write":          {"create", "update", "save"},
	"save":           {"write", "store"},
	"upload":         {"create", "upload"},
	"size":           {"info", "metadata"},
	"metadata":       {"info"},
	"json":           {"json", "decode", "encode"},
	"concurrently":   {"parallel"},
	"concurrent":     {"parallel"},
	"simultaneously": {"parallel"},
	"same":           {"parallel"},
	"report":         {"progress"},
	"file":           {"file", "io"},
	"parse":          {"decode"},
	"serialize":      {"encode"},
	"stringify":      {"encode"},
	"env":            {"environment"},
	"variable":       {"environment", "env"},
	"wait":           {"sleep", "long", "running"},
})

func stemmedSynonyms(m map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, vs := range m {
		key := english.Stem(k, false)
		for _, v := range vs {
			if s := english.Stem(v, false); s != key {
				out[key] = append(out[key], s)
			}
		}
	}
	return out
}

// Hit is one result of search_docs.
type Hit struct {
	Name    string  `json:"name"`
	API     string  `json:"api"`
	Summary string  `json:"summary,omitempty"`
	Score   float64 `json:"score"`
	// Signature is the function's (or built-in's) compact signature.
	Signature string `json:"signature,omitempty"`
}

// DefaultSearchLimit is how many hits Search returns by default.
const DefaultSearchLimit = 20

// queryTerm is one word of a query and how much it counts.
type queryTerm struct {
	word   string
	weight float64
}

// queryTerms are the words of a query and their synonyms.
func queryTerms(query string) []queryTerm {
	var terms []queryTerm
	seen := map[string]bool{}
	words := tokens(query)
	if len(words) > maxQueryWords {
		words = words[:maxQueryWords]
	}
	for _, w := range words {
		if !seen[w] {
			seen[w] = true
			terms = append(terms, queryTerm{w, 1})
		}
	}
	for _, w := range words {
		for _, s := range synonyms[w] {
			if !seen[s] {
				seen[s] = true
				terms = append(terms, queryTerm{s, synonymWeight})
			}
		}
	}
	return terms
}

// nameBonus is how much a name made only of the query's words adds.
const nameBonus = 0.15

// precision is the share of a name's words the query has.
func precision(name []string, words map[string]bool) float64 {
	if len(name) == 0 {
		return 0
	}
	n := 0
	for _, w := range name {
		if words[w] {
			n++
		}
	}
	return float64(n) / float64(len(name))
}

type scored struct {
	doc   int32
	score float64
}

// rank scores every document holding a query term, best first.
func (d *Docs) rank(query string) []scored {
	ix := d.index
	n := float64(len(ix.docs))
	scores := map[int32]float64{}
	terms := queryTerms(query)
	words := map[string]bool{}
	for _, qt := range terms {
		words[qt.word] = true
	}
	for _, qt := range terms {
		posts := ix.postings[qt.word]
		if len(posts) == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(len(posts))+0.5)/(float64(len(posts))+0.5))
		for _, p := range posts {
			doc := &ix.docs[p.doc]
			tf := 0.0
			for f := range numFields {
				if p.tf[f] == 0 {
					continue
				}
				norm := 1 - normalise[f] + normalise[f]*float64(doc.length[f])/ix.avgLen[f]
				tf += weights[f] * float64(p.tf[f]) / norm
			}
			scores[p.doc] += qt.weight * idf * tf * (k1 + 1) / (k1 + tf)
		}
	}
	out := make([]scored, 0, len(scores))
	for doc, s := range scores {
		if d.noIO && ix.docs[doc].builtin != nil && ix.docs[doc].builtin.IO {
			continue
		}
		// Among close scores, the function whose name says no more than
		// the query wins: "create an issue" is issues_create rather than
		// reactions_create_for_issue.
		s *= 1 + nameBonus*precision(ix.docs[doc].name, words)
		out = append(out, scored{doc, s})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].doc < out[j].doc
	})
	if len(out) > maxHits {
		out = out[:maxHits]
	}
	return out
}

// CheckQuery refuses a query that is too long or has no words to look for.
func CheckQuery(query string) error {
	if len(query) > MaxQueryBytes {
		return fmt.Errorf("the query is %d bytes long, more than %d: search with a few words of what the function does", len(query), MaxQueryBytes)
	}
	if len(tokens(query)) == 0 {
		return fmt.Errorf("the query %q has no words to look for: search with a few words of what the function does", cutRunes(query, 100))
	}
	return nil
}

// hit renders a ranked document.
func (d *Docs) hit(s scored) Hit {
	doc := d.index.docs[s.doc]
	score := float64(int(s.score*100)) / 100
	if doc.builtin != nil {
		return Hit{Name: doc.builtin.Name(), API: "builtin", Summary: doc.builtin.Summary, Score: score, Signature: doc.builtin.Signature}
	}
	t := d.typerOf(doc.api, d.names[doc.api.Name])
	return Hit{Name: callName(doc.api, doc.fn), API: doc.api.Name, Summary: summary(doc.fn) + learnedMark(t, doc.fn), Score: score,
		Signature: compactSignature(t, doc.api, doc.fn)}
}

// Search ranks functions and built-ins by the words of query (BM25F over
// their names, summaries, tags, parameters, paths and descriptions) and
// returns the best limit (DefaultSearchLimit when limit <= 0); nothing
// for a query that is too long or has no words.
func (d *Docs) Search(query string, limit int) []Hit {
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	if CheckQuery(query) != nil {
		return nil
	}
	ranked := d.rank(query)
	var hits []Hit
	for _, s := range ranked[:min(limit, len(ranked))] {
		hits = append(hits, d.hit(s))
	}
	return hits
}

// SearchPage is search_docs: one page of the ranked results, a line each
// ("signature -- summary"), best first.
func (d *Docs) SearchPage(query string, req PageRequest) (Page, error) {
	if err := CheckQuery(query); err != nil {
		return Page{}, err
	}
	if req.Limit == 0 {
		req.Limit = DefaultSearchLimit
	}
	ranked := d.rank(query)
	key := d.listingKey("search", strings.Join(tokens(query), " "))
	return paginate(key, len(ranked), req,
		func(i int) string {
			h := d.hit(ranked[i])
			return line(h.Signature, h.Summary)
		},
		func(first, last, total int) string {
			if total == 0 {
				return fmt.Sprintf("Nothing matches %q: try other words, or list_functions.", cutRunes(query, 200))
			}
			return fmt.Sprintf("Results %d-%d of %d for %q, best first (get_function_docs gives a function's types):", first, last, total, cutRunes(query, 200))
		},
		func(cursor string, remaining int) string {
			return fmt.Sprintf("-- %d more: call search_docs again with the same query and cursor %s", remaining, quote(cursor))
		})
}

// line is one entry of a listing: "signature -- summary".
func line(signature, summary string) string {
	if summary == "" {
		return signature
	}
	return signature + " -- " + summary
}
