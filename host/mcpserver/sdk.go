package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/sdkdocs"
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
	s.sdkDocs.Store(d)
	readOnly := func(title string) mcp.ToolOption {
		return mcp.WithToolAnnotation(mcp.ToolAnnotation{
			Title:           title,
			ReadOnlyHint:    mcp.ToBoolPtr(true),
			DestructiveHint: mcp.ToBoolPtr(false),
			IdempotentHint:  mcp.ToBoolPtr(true),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		})
	}
	s.mcp.AddTool(mcp.NewTool(ToolListAPIs,
		mcp.WithDescription("Lists the APIs and MCP servers scripts can call through sdk, with their descriptions and number of functions."),
		readOnly("List the sdk's APIs"),
	), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return jsonResult(s.sdkDocs.Load().ListAPIs())
	})
	s.mcp.AddTool(mcp.NewTool(ToolListFunctions,
		mcp.WithDescription("Lists the sdk functions (sdk.<api>.<name>) with one-line summaries, of one API and one tag when given."),
		mcp.WithString("api", mcp.Description("an API or MCP server name, from list_apis")),
		mcp.WithString("tag", mcp.Description("only the functions with this tag")),
		readOnly("List sdk functions"),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fns, err := s.sdkDocs.Load().ListFunctions(req.GetString("api", ""), req.GetString("tag", ""))
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return jsonResult(fns)
	})
	s.mcp.AddTool(mcp.NewTool(ToolGetFunctionDocs,
		mcp.WithDescription("The documentation of one sdk function: its Luau signature, the types of its parameters, body and result, and the schemas they use."),
		mcp.WithString("name", mcp.Required(), mcp.Description("the function: list_pets, sdk.list_pets or sdk.petstore.list_pets")),
		readOnly("Get an sdk function's docs"),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text, err := s.sdkDocs.Load().FunctionDocs(req.GetString("name", ""))
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(text), nil
	})
	s.mcp.AddTool(mcp.NewTool(ToolSearchDocs,
		mcp.WithDescription("Searches the sdk's functions by words in their names, summaries, descriptions and parameters; best first."),
		mcp.WithString("query", mcp.Required(), mcp.Description("words to look for, e.g. \"create issue comment\"")),
		mcp.WithNumber("limit", mcp.Description(fmt.Sprintf("how many results at most (default %d)", sdkdocs.DefaultSearchLimit))),
		readOnly("Search the sdk's docs"),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		limit := req.GetInt("limit", sdkdocs.DefaultSearchLimit)
		limit = min(max(limit, 1), 100)
		return jsonResult(s.sdkDocs.Load().Search(req.GetString("query", ""), limit))
	})

	s.addSDKResources(d)
	for _, t := range sdkdocs.ResourceTemplates {
		s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(t, strings.TrimPrefix(t, sdkdocs.URIPrefix),
			mcp.WithTemplateDescription("sdk documentation: "+t), mcp.WithTemplateMIMEType("text/markdown")), s.readSDKResource)
	}
}

// readSDKResource reads an sdk:// resource from the current docs.
func (s *Server) readSDKResource(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	text, err := s.sdkDocs.Load().Resource(req.Params.URI)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", server.ErrResourceNotFound, req.Params.URI, err)
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
	if writers == 0 {
		b.WriteString(" Every sdk function only reads: OpenAPI operations of method GET, HEAD or OPTIONS, MCP tools their server marks read-only.")
	} else {
		fmt.Fprintf(&b, " %d sdk functions can create, change or delete data (OpenAPI operations of other methods than GET, HEAD and OPTIONS; "+
			"MCP tools their server does not mark read-only), so a script can too.", writers)
	}
	b.WriteString(" Call them as sdk.<api>.<function>(params?, body?) (an MCP tool: sdk.<server>.<tool>(args?)); " +
		"they return data, response ({status, headers}); an HTTP error raises a table {status, message, body, headers} " +
		"that pcall catches. Run independent calls concurrently with parallel({function() ... end, ...}, limit?), " +
		"which returns their first results in order.")
	if d.Count() <= s.cfg.InlineSignatures {
		b.WriteString(" Functions:\n")
		for _, sig := range d.Signatures() {
			b.WriteString("- " + sig + "\n")
		}
		return strings.TrimRight(b.String(), "\n")
	}
	fmt.Fprintf(&b, " There are %d functions: find them with %s, %s and %s before writing the script, or read the sdk:// resources.",
		d.Count(), ToolSearchDocs, ToolListFunctions, ToolGetFunctionDocs)
	return b.String()
}

// writes says how many of an API's functions can change data.
func writes(e sdkdocs.Effects) string {
	switch {
	case e.Writers == 0:
		return "read-only"
	case e.Writers == e.Functions:
		return "all can change data"
	}
	return fmt.Sprintf("%d can change data", e.Writers)
}

// jsonResult is a tool result holding v as indented JSON text.
func jsonResult(v any) (*mcp.CallToolResult, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultText(string(b)), nil
}
