// Package openapi loads OpenAPI 3.0 and 3.1 and Swagger 2.0 specs (JSON or
// YAML, from a file or an http(s) URL, with local and remote $refs) into
// catalog.APIs, and caches the result on disk keyed by the spec's sha256.
// Parsing is pb33f/libopenapi's; this package decides what a script can
// call: function names, parameters with their serialisation, bodies,
// responses, security and the base URL. Loading is lenient: problems that
// leave operations callable are warnings on the API.
package openapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi/datamodel"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	"github.com/pb33f/libopenapi/utils"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// MaxSpecBytes caps the size of a spec (and of each document it refers
// to): GitHub's, one of the largest, is 13 MB.
const MaxSpecBytes = 64 << 20

// maxWarnings caps the warnings one API keeps; the last says how many more.
const maxWarnings = 50

// Source names one spec to load.
type Source struct {
	// Name is the API's name (sdk.<Name>).
	Name string
	// Spec is a file path or an http(s) URL. A relative path is relative
	// to Dir.
	Spec string
	Dir  string
}

// Location is the spec's absolute path or URL.
func (s Source) Location() string {
	if isURL(s.Spec) || filepath.IsAbs(s.Spec) || s.Dir == "" {
		return s.Spec
	}
	return filepath.Join(s.Dir, s.Spec)
}

// Options configure loading.
type Options struct {
	// HTTPClient fetches URL specs and remote references; nil is
	// http.DefaultClient.
	HTTPClient *http.Client
	// Cache, when not nil, keeps parsed specs on disk.
	Cache *Cache
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// Load reads and converts one spec. The error names the source and the
// cause; warnings about a usable spec are on the API.
func Load(ctx context.Context, src Source, opts Options) (*catalog.API, error) {
	api, _, err := LoadParsed(ctx, src, opts)
	return api, err
}

// LoadParsed is Load, and reports whether the spec was parsed (rather than
// read from the cache): parsing leaves garbage worth returning to the
// system.
func LoadParsed(ctx context.Context, src Source, opts Options) (api *catalog.API, parsed bool, err error) {
	loc := src.Location()
	data, err := read(ctx, loc, opts.HTTPClient)
	if err != nil {
		return nil, false, fmt.Errorf("api %s: reading spec %s: %w", src.Name, loc, err)
	}
	if api := opts.Cache.get(data); api != nil {
		api.Name, api.Source = src.Name, loc
		resolveBaseURL(api, loc)
		return api, false, nil
	}
	api, external, err := parse(ctx, data, loc, opts.HTTPClient)
	if err != nil {
		return nil, true, fmt.Errorf("api %s: spec %s: %w", src.Name, loc, err)
	}
	// The converted API still shares memory with the parser's document
	// (strings, numbers): a copy through its serialised form keeps only
	// the catalog, and is what the cache stores.
	encoded, err := encode(api)
	if err != nil {
		return nil, true, fmt.Errorf("api %s: spec %s: %w", src.Name, loc, err)
	}
	if api, err = decode(encoded); err != nil {
		return nil, true, fmt.Errorf("api %s: spec %s: %w", src.Name, loc, err)
	}
	if !external { // a spec with external references could change under the same hash
		opts.Cache.put(data, encoded)
	}
	api.Name = src.Name
	resolveBaseURL(api, loc)
	return api, true, nil
}

func read(ctx context.Context, loc string, client *http.Client) ([]byte, error) {
	if !isURL(loc) {
		f, err := os.Open(loc)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readCapped(f)
	}
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	return readCapped(resp.Body)
}

func readCapped(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSpecBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSpecBytes {
		return nil, fmt.Errorf("larger than %d MiB", MaxSpecBytes>>20)
	}
	return data, nil
}

// hasExternalRef reports whether a $ref of the parsed document (JSON or
// YAML) leaves it: a "$ref" key whose scalar value does not start with
// '#'. The values are read as YAML reads them, so a folded, literal, quoted
// or flow reference ("$ref: >-" with the target on the next line) counts
// by its value, not by how it is written. Aliases are not followed: the
// node they name is visited where it is defined.
func hasExternalRef(root *yaml.Node) bool {
	stack := []*yaml.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == nil || n.Kind == yaml.AliasNode {
			continue
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Kind == yaml.ScalarNode && k.Value == "$ref" && v.Kind == yaml.ScalarNode && !strings.HasPrefix(v.Value, "#") {
					return true
				}
			}
		}
		stack = append(stack, n.Content...)
	}
	return false
}

// parse converts a spec's bytes. loc is where they came from (a path or
// URL): relative references are resolved against it. The result depends
// on nothing else, so that the cache can hold it: its BaseURL is left
// empty (resolveBaseURL sets it on every load).
// external reports whether references outside the document were followed.
func parse(ctx context.Context, data []byte, loc string, client *http.Client) (api *catalog.API, external bool, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, false, errors.New("the file is empty")
	}
	cfg := &datamodel.DocumentConfiguration{
		SkipMetadataCollection: true,
		Logger:                 slog.New(slog.DiscardHandler),
	}
	doc, err := libopenapi.NewDocumentWithConfiguration(data, cfg)
	if err != nil {
		return nil, false, fmt.Errorf("not an OpenAPI or Swagger document: %w", firstLine(err))
	}
	// References are followed when the model is built: whether the
	// document has external ones is known from its nodes by then.
	if hasExternalRef(doc.GetSpecInfo().RootNode) {
		external = true
		if isURL(loc) {
			u, _ := url.Parse(loc)
			dir := *u
			dir.Path = dir.Path[:strings.LastIndex(dir.Path, "/")+1]
			cfg.BaseURL = &dir
		} else {
			abs, _ := filepath.Abs(loc)
			cfg.BasePath = filepath.Dir(abs)
			cfg.SpecFilePath = filepath.Base(abs)
			cfg.AllowFileReferences = true
		}
		cfg.AllowRemoteReferences = true
		cfg.RemoteURLHandler = remoteHandler(ctx, client)
	}
	b := newBuilder(loc)
	switch doc.GetSpecInfo().SpecType {
	case utils.OpenApi3:
		model, err := doc.BuildV3Model()
		if model == nil {
			return nil, external, fmt.Errorf("cannot build the OpenAPI %s model: %w", doc.GetVersion(), firstLine(err))
		}
		b.problems(err)
		b.v3(&model.Model)
	case utils.OpenApi2:
		model, err := doc.BuildV2Model()
		if model == nil {
			return nil, external, fmt.Errorf("cannot build the Swagger 2.0 model: %w", firstLine(err))
		}
		b.problems(err)
		b.v2(&model.Model)
	default:
		return nil, external, fmt.Errorf("not an OpenAPI 3 or Swagger 2.0 document (found %q)", doc.GetSpecInfo().SpecType)
	}
	if len(b.api.Functions) == 0 {
		b.warn("the spec defines no operations")
	}
	b.finish()
	// The library keeps content-keyed caches process-wide; the document is
	// not needed any more.
	libopenapi.ClearAllCaches()
	return b.api, external || b.schemas.external, nil
}

// remoteHandler fetches remote references with the loader's client, its
// context and the size cap.
func remoteHandler(ctx context.Context, client *http.Client) utils.RemoteURLHandler {
	if client == nil {
		client = http.DefaultClient
	}
	return func(u string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := readCapped(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", u, err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
}

// firstLine keeps the first line of a long joined error.
func firstLine(err error) error {
	if err == nil {
		return errors.New("unknown error")
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		return fmt.Errorf("%s (and more)", msg[:i])
	}
	return err
}

// builder assembles one API.
type builder struct {
	loc      string
	api      *catalog.API
	schemas  *schemas
	warnings map[string]bool
	dropped  int
}

func newBuilder(loc string) *builder {
	b := &builder{loc: loc, api: &catalog.API{Kind: catalog.OpenAPI, Source: loc}, warnings: map[string]bool{}}
	b.schemas = newSchemas(b.api, b.warn)
	return b
}

// namedSchema adds the spec's schema name, found at prefix+name (its
// JSON pointer), to the API under its own name: first, in spec order, so
// that it keeps that name even when an inline copy of it is met first.
func (b *builder) namedSchema(prefix, name string, p *base.SchemaProxy) {
	ref := prefix + escapePointer(name)
	if _, done := b.schemas.names[ref]; done {
		return
	}
	b.schemas.names[ref] = name
	b.api.Schemas[name] = &catalog.Schema{}
	if s := p.Schema(); s != nil {
		b.api.Schemas[name] = b.schemas.schema(s, 0)
	} else {
		b.warn("schema %s could not be built: %v", name, p.GetBuildError())
	}
}

// newFunction is the function of one operation (method and path) before
// its parameters, body and responses: what Swagger 2 and OpenAPI 3 write
// alike.
func newFunction(method, path, operationID, summary, description string, tags []string, deprecated bool) *catalog.Function {
	return &catalog.Function{
		Name:        catalog.OperationName(operationID, method, path),
		Kind:        catalog.OpenAPI,
		OperationID: operationID,
		Method:      method,
		Path:        path,
		Summary:     strings.TrimSpace(summary),
		Description: strings.TrimSpace(description),
		Tags:        tags,
		Deprecated:  deprecated,
	}
}

func (b *builder) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if b.warnings[msg] {
		return
	}
	if len(b.api.Warnings) >= maxWarnings {
		b.dropped++
		return
	}
	b.warnings[msg] = true
	b.api.Warnings = append(b.api.Warnings, msg)
}

// problems records what the library reported while building a model that
// it built all the same (circular references, unresolved ones).
func (b *builder) problems(err error) {
	if err == nil {
		return
	}
	var multi interface{ Unwrap() []error }
	errs := []error{err}
	if errors.As(err, &multi) {
		errs = multi.Unwrap()
	}
	for _, e := range errs {
		msg := e.Error()
		if strings.Contains(msg, "circular reference") {
			continue // recursive schemas are fine: they become named types
		}
		b.warn("%s", strings.SplitN(msg, "\n", 2)[0])
	}
}

// finish names the functions (clashes get _2, _3 in spec order) and
// closes the warnings.
func (b *builder) finish() {
	names := make([]string, len(b.api.Functions))
	for i, f := range b.api.Functions {
		names[i] = f.Name
	}
	catalog.Uniquify(names)
	for i, f := range b.api.Functions {
		if f.Name != names[i] {
			b.warn("operation %s %s: the name %s is taken; it is %s", f.Method, f.Path, f.Name, names[i])
		}
		f.Name = names[i]
	}
	if b.dropped > 0 {
		b.api.Warnings = append(b.api.Warnings, fmt.Sprintf("... and %d more warnings", b.dropped))
	}
}
