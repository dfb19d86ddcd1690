package mcpserver

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
)

// The sdk's documentation for models (docs/sdk.md, "Documentation for
// models and people"): with APIs or
// MCP servers configured, the discovery tools beside execute_script, the
// sdk:// resources, and, when the sdk is small, its signatures in
// execute_script's description.

// DefaultInlineSignatures is how many sdk functions execute_script's
// description lists by signature; past it, it points to the discovery tools.
const DefaultInlineSignatures = 40

// The discovery tools' names.
const (
	ToolListAPIs        = "list_apis"
	ToolListFunctions   = "list_functions"
	ToolGetFunctionDocs = "get_function_docs"
	ToolSearchDocs      = "search_docs"
)

// addSDKDocs registers the discovery tools and the sdk:// resources of d.
// The tools read the current docs (SetSDKDocs) on each call.
func (s *Server) addSDKDocs(d *sdkdocs.Docs) {
	s.sdkDocs.Store(s.forSandbox(d))
	readOnly := func(title string) mcp.ToolOption {
		return mcp.WithToolAnnotation(mcp.ToolAnnotation{
			Title:           title,
			ReadOnlyHint:    mcp.ToBoolPtr(true),
			DestructiveHint: mcp.ToBoolPtr(false),
			IdempotentHint:  mcp.ToBoolPtr(true),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		})
	}
	limitOption := func(def int) mcp.ToolOption {
		return mcp.WithNumber("limit", mcp.Description(fmt.Sprintf("at most this many lines (default %d, at most %d; a page also stops before %d characters)", def, sdkdocs.MaxPageLimit, sdkdocs.MaxAnswer)))
	}
	cursorOption := mcp.WithString("cursor", mcp.Description("where to go on: the cursor the previous page ended with (none for the first page)"))
	s.mcp.AddTool(mcp.NewTool(ToolListAPIs,
		mcp.WithDescription("Lists the APIs and MCP servers scripts can call through sdk, one a line: kind, number of functions, title, version, base URL and description."),
		limitOption(sdkdocs.DefaultPageLimit), cursorOption,
		readOnly("List the sdk's APIs"),
	), paged(func(ctx context.Context, req mcp.CallToolRequest, page sdkdocs.PageRequest) (*mcp.CallToolResult, error) {
		return pageResult(s.awaitSDK(ctx).APIsPage(page))
	}))
	s.mcp.AddTool(mcp.NewTool(ToolListFunctions,
		mcp.WithDescription("Lists the sdk functions, one a line (signature -- summary), of one API and one tag when given, in pages: a page that is not the last ends with how many are left and the cursor of the next."),
		mcp.WithString("api", mcp.Description("an API or MCP server name, from list_apis")),
		mcp.WithString("tag", mcp.Description("only the functions with this tag")),
		limitOption(sdkdocs.DefaultPageLimit), cursorOption,
		readOnly("List sdk functions"),
	), paged(func(ctx context.Context, req mcp.CallToolRequest, page sdkdocs.PageRequest) (*mcp.CallToolResult, error) {
		d, api := s.awaitSDK(ctx), req.GetString("api", "")
		p, err := d.FunctionsPage(api, req.GetString("tag", ""), page)
		return pendingResult(d, api == "", p, err)
	}))
	s.mcp.AddTool(mcp.NewTool(ToolGetFunctionDocs,
		mcp.WithDescription("The documentation of one sdk function or built-in (json.encode, parallel, progress, ...): its Luau signature, the types of its parameters, body and result with their formats and descriptions, and the schemas they use."),
		mcp.WithString("name", mcp.Required(), mcp.Description("the function: list_pets, sdk.list_pets, sdk.petstore.list_pets, or a built-in such as json.decode")),
		readOnly("Get an sdk function's docs"),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		name := req.GetString("name", "")
		if text, ok := s.builtinDocs(name); ok {
			return mcp.NewToolResultText(text), nil
		}
		text, err := s.awaitSDK(ctx).FunctionDocs(name)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(text), nil
	})
	s.mcp.AddTool(mcp.NewTool(ToolSearchDocs,
		mcp.WithDescription("Searches the sdk's functions and the sandbox's built-ins by what they do, in the words you would use (\"remember a fact about a person\", \"create issue comment\"); best first, one a line (signature -- summary), in pages."),
		mcp.WithString("query", mcp.Required(), mcp.Description(fmt.Sprintf("a few words of what the function does (at most %d bytes)", sdkdocs.MaxQueryBytes))),
		limitOption(sdkdocs.DefaultSearchLimit), cursorOption,
		readOnly("Search the sdk's docs"),
	), paged(func(ctx context.Context, req mcp.CallToolRequest, page sdkdocs.PageRequest) (*mcp.CallToolResult, error) {
		d := s.awaitSDK(ctx)
		p, err := d.SearchPage(req.GetString("query", ""), page)
		return pendingResult(d, true, p, err)
	}))

	s.addSDKResources(d)
	for _, t := range sdkdocs.ResourceTemplates {
		s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(t, strings.TrimPrefix(t, sdkdocs.URIPrefix),
			mcp.WithTemplateDescription("sdk documentation: "+t), mcp.WithTemplateMIMEType("text/markdown")), s.readSDKResource)
	}
}

// readSDKResource reads an sdk:// resource from the current docs.
func (s *Server) readSDKResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	text, err := s.awaitSDK(ctx).Resource(req.Params.URI)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", server.ErrResourceNotFound, err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/markdown", Text: text}}, nil
}

// addSDKResources lists d's sdk:// resources.
func (s *Server) addSDKResources(d *sdkdocs.Docs) {
	for _, r := range d.Resources() {
		s.mcp.AddResource(mcp.NewResource(r.URI, r.Name, mcp.WithResourceDescription(r.Description), mcp.WithMIMEType("text/markdown")), s.readSDKResource)
		s.addDocURI(r.URI)
	}
}

// SetSDKDocs replaces the sdk's documentation after the sdk changed (an
// upstream MCP server's tools did): the discovery tools and resources
// answer from d from now on, the resources of functions gone are removed,
// and execute_script's description is rewritten. Clients are told with
// notifications/tools/list_changed and notifications/resources/list_changed.
// The Server must have been made with Config.SDKDocs.
func (s *Server) SetSDKDocs(d *sdkdocs.Docs) {
	s.sdkMu.Lock()
	defer s.sdkMu.Unlock()
	d = s.forSandbox(d)
	old := s.sdkDocs.Swap(d)
	keep := map[string]bool{}
	for _, r := range d.Resources() {
		keep[r.URI] = true
	}
	var gone []string
	for _, r := range old.Resources() {
		if !keep[r.URI] {
			gone = append(gone, r.URI)
		}
	}
	if len(gone) > 0 {
		s.mcp.DeleteResources(gone...)
		s.removeDocURIs(gone)
	}
	s.addSDKResources(d)
	s.mcp.AddTool(s.tool(), s.executeScript)
}

// forSandbox is d as this server's scripts see it: without the io
// built-ins when io is off.
func (s *Server) forSandbox(d *sdkdocs.Docs) *sdkdocs.Docs {
	if s.cfg.IO == nil {
		return d.WithoutIO()
	}
	return d
}

// maxInlineSignatures caps the characters of the signatures
// execute_script's description lists: past it, even with few functions,
// the description points to the discovery tools instead.
const maxInlineSignatures = 12000

// length is the characters of lines, one a line.
func length(lines []string) int {
	n := 0
	for _, l := range lines {
		n += len(l) + 3
	}
	return n
}

// sdkDescription is what execute_script's description says of the sdk:
// what scripts reach and whether they can change it, then every signature
// when there are few, else where to find them.
func (s *Server) sdkDescription() string {
	d := s.sdkDocs.Load()
	if d == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nAPIs (sdk): ")
	effects := d.Effects()
	writers := 0
	for i, e := range effects {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "sdk.%s (%s, %d functions, %s)", e.API, e.Kind, e.Functions, writes(e))
		writers += e.Writers
	}
	b.WriteString(". Scripts reach the network through these only.")
	switch {
	case !sdkdocs.ReadOnly(effects) && writers == 0:
		b.WriteString(" Some MCP servers' tools are not listed yet, and may create, change or delete data.")
	case writers == 0:
		b.WriteString(" Every sdk function only reads: OpenAPI operations of method GET, HEAD or OPTIONS, MCP tools their server marks read-only, " +
			"and those the configuration declares safe.")
	default:
		fmt.Fprintf(&b, " %d sdk functions can create, change or delete data (OpenAPI operations of other methods than GET, HEAD and OPTIONS; "+
			"MCP tools their server does not mark read-only; unless the configuration declares them safe), so a script can too.", writers)
	}
	b.WriteString(" Call them as sdk.<api>.<function>(params?, body?) (an MCP tool: sdk.<server>.<tool>(args?)); " +
		"they return data, response ({status, headers}); an HTTP error raises a table {status, message, body, headers} " +
		"that pcall catches. Run independent calls concurrently with parallel({function() ... end, ...}, limit?), " +
		"which returns their first results in order.")
	if d.Count() <= s.cfg.InlineSignatures {
		sigs := d.Signatures()
		if length(sigs) > maxInlineSignatures {
			sigs = d.CompactSignatures() // argument types of over 120 characters as {...}
		}
		if length(sigs) <= maxInlineSignatures {
			b.WriteString(" Functions (get_function_docs gives one's types):\n")
			for _, sig := range sigs {
				b.WriteString("- " + sig + "\n")
			}
			return strings.TrimRight(b.String(), "\n")
		}
	}
	fmt.Fprintf(&b, " There are %d functions: find them with %s, %s and %s before writing the script, or read the sdk:// resources.",
		d.Count(), ToolSearchDocs, ToolListFunctions, ToolGetFunctionDocs)
	return b.String()
}

// writes says how many of an API's functions can change data.
func writes(e sdkdocs.Effects) string {
	switch {
	case e.Pending:
		return "tools not listed yet: they may change data"
	case e.Writers == 0:
		return "read-only"
	case e.Writers == e.Functions:
		return "all can change data"
	}
	return fmt.Sprintf("%d can change data", e.Writers)
}

// paged is the handler of a paged tool: h gets the page its arguments
// ask for (limit, cursor); a limit or cursor that is not one is a tool
// error.
func paged(h func(context.Context, mcp.CallToolRequest, sdkdocs.PageRequest) (*mcp.CallToolResult, error)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		page, err := pageRequest(req)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return h(ctx, req, page)
	}
}

// pageRequest reads a discovery tool's limit and cursor: the limit a
// whole number of at least 1 (larger than sdkdocs.MaxPageLimit is taken
// as it), the cursor a string.
func pageRequest(req mcp.CallToolRequest) (sdkdocs.PageRequest, error) {
	var page sdkdocs.PageRequest
	args := req.GetArguments()
	if raw, ok := args["limit"]; ok && raw != nil {
		n, ok := raw.(float64)
		if !ok || n != math.Trunc(n) || n < 1 {
			return page, fmt.Errorf("limit must be a whole number of at least 1, got %v", raw)
		}
		page.Limit = int(min(n, sdkdocs.MaxPageLimit))
	}
	if raw, ok := args["cursor"]; ok && raw != nil {
		c, ok := raw.(string)
		if !ok {
			return page, fmt.Errorf("cursor must be a string, the one a page ended with, got %v", raw)
		}
		page.Cursor = c
	}
	return page, nil
}

// pageResult is a page as a tool result (its text: the entries, how many
// are left and the next cursor); an error as a tool error.
func pageResult(p sdkdocs.Page, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText(p.Text), nil
}

// builtinDocs is the documentation page of a built-in (json.encode,
// parallel, io.open...) as this server's configuration renders it; false
// for any other name, or an io built-in when io is off.
func (s *Server) builtinDocs(name string) (string, bool) {
	b, ok := s.sdkDocs.Load().Builtin(name)
	if !ok {
		return "", false
	}
	for _, d := range s.docs() {
		if d.name == b.Name() {
			return d.text, true
		}
	}
	return "", false
}
