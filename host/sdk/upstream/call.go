package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/contract/telemetry"
	"github.com/toolscript/toolscript/host/sdk/sdkargs"
)

// maxErrorText bounds what an upstream says that an error message quotes
// (the text of a tool's error, a JSON-RPC error's message): longer text
// is cut at a character boundary and says how much was left out. A tool
// error's whole content is in the error's content field.
const maxErrorText = 1024

// CallTool calls the tool fn of server api with the script's argument list
// (the JSON array [args]): the sdk's ToolCaller. The arguments are checked
// against the tool's current inputSchema first; the call carries ctx
// (deadline and cancellation, sent upstream as notifications/cancelled)
// and the server's per-call timeout. name ("sdk.files.read_file") starts
// every message.
func (s *Set) CallTool(ctx context.Context, api *catalog.API, fn *catalog.Function, name string, rawArgs json.RawMessage) *sdkcall.Response {
	srv := s.byName[api.Name]
	if srv == nil {
		return argumentError(name, fmt.Errorf("no upstream MCP server is named %s", api.Name))
	}
	ts := srv.tools.Load()
	if ts == nil {
		return argumentError(name, fmt.Errorf("the MCP server %s is not started yet (its tools are not listed)", api.Name))
	}
	t := ts.byTool[fn.Tool]
	if t == nil {
		return argumentError(name, fmt.Errorf("the MCP server %s no longer offers the tool %q (its tools changed; search_docs lists the current ones)", api.Name, fn.Tool))
	}
	args, err := toolArguments(rawArgs)
	if err == nil {
		err = t.check(args)
	}
	if err != nil {
		return argumentError(name, err)
	}
	res, err := srv.call(ctx, fn.Tool, name, args)
	if err != nil {
		fail := sdkcall.Upstream
		var le *limitError
		if errors.As(err, &le) {
			fail = sdkcall.Limit
		}
		return &sdkcall.Response{Fail: fail, Message: name + ": " + err.Error()}
	}
	if ctx.Err() != nil { // no work on a result the execution has no time for
		return &sdkcall.Response{Fail: sdkcall.Upstream, Message: name + ": " + cancelled(ctx).Error()}
	}
	return result(name, res, s.opts.MaxResponseBytes)
}

// argumentError is the error of arguments that do not fit the tool; what
// it quotes of the tool's schema (an enum's values...) is capped too.
func argumentError(name string, err error) *sdkcall.Response {
	return &sdkcall.Response{Fail: sdkcall.Argument, Message: name + ": " + capText(err.Error(), maxErrorText)}
}

// toolArguments decodes the script's argument list into the tool's one
// table of arguments (an empty table for none).
func toolArguments(raw json.RawMessage) (map[string]any, error) {
	list, err := sdkargs.List(raw, false)
	if err != nil {
		return nil, err
	}
	switch {
	case len(list) == 0:
		return map[string]any{}, nil
	case len(list) > 1:
		return nil, fmt.Errorf("takes one argument, a table of the tool's arguments; got %d arguments", len(list))
	}
	switch x := list[0].(type) {
	case map[string]any:
		return x, nil
	case []any:
		if len(x) == 0 { // {} encodes as an empty list
			return map[string]any{}, nil
		}
	}
	return nil, fmt.Errorf("the arguments must be a table of argument names to values, got %s", sdkargs.TypeName(list[0]))
}

// toolPlace is how a tool's argument errors name a location:
// "argument 'items'[2].name: ", "missing required argument 'path'".
var toolPlace = sdkargs.Place{Value: "arguments", Member: "argument", RootMember: true}

// compile prepares the tool's checks once: its inputSchema compiled by a
// real JSON Schema validator. A schema that does not compile checks
// nothing (the server has the last word), and no schema is ever fetched:
// references outside the document resolve to nothing.
func (t *tool) compile() {
	t.once.Do(func() {
		if len(t.input) == 0 {
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(t.input))
		if err != nil {
			return
		}
		openAPINullable(doc, 0)
		if m, ok := doc.(map[string]any); ok {
			if props, ok := m["properties"].(map[string]any); ok {
				for k := range props {
					t.props = append(t.props, k)
				}
				sort.Strings(t.props)
			}
			switch ap := m["additionalProperties"].(type) {
			case bool:
				t.open = ap
			case map[string]any:
				t.open = true
			}
			if len(t.props) == 0 {
				t.open = true
			}
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.UseLoader(noLoader{})
		if err := c.AddResource("mcp:///input.json", doc); err != nil {
			return
		}
		if s, err := c.Compile("mcp:///input.json"); err == nil {
			t.schema = s
		}
	})
}

// openAPINullable rewrites OpenAPI's `nullable: true` in a JSON Schema as
// JSON Schema says it, as the docs read it: the property may be null
// ("null" joins its type) and may be left out (it leaves its object's
// required list).
func openAPINullable(v any, depth int) {
	m, ok := v.(map[string]any)
	if !ok || depth > maxSchemaDepth {
		return
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for name, p := range props {
			pm, ok := p.(map[string]any)
			if !ok || pm["nullable"] != true {
				continue
			}
			if req, ok := m["required"].([]any); ok {
				m["required"] = slices.DeleteFunc(req, func(r any) bool { return r == name })
			}
		}
	}
	if m["nullable"] == true {
		switch t := m["type"].(type) {
		case string:
			m["type"] = []any{t, "null"}
		case []any:
			if !slices.Contains(t, any("null")) {
				m["type"] = append(t, "null")
			}
		}
	}
	for _, k := range []string{"properties", "$defs", "definitions"} {
		if sub, ok := m[k].(map[string]any); ok {
			for _, s := range sub {
				openAPINullable(s, depth+1)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not"} {
		openAPINullable(m[k], depth+1)
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := m[k].([]any); ok {
			for _, s := range list {
				openAPINullable(s, depth+1)
			}
		}
	}
}

// noLoader refuses every schema reference outside the tool's own
// document: a tool's schema makes toolscript read no file and no URL.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: schemas outside the tool's inputSchema are not loaded", url)
}

// check validates args: unknown argument names first (with the closest
// declared name: models misspell), then the schema.
func (t *tool) check(args map[string]any) error {
	t.compile()
	if !t.open {
		var unknown []string
		for k := range args {
			if !contains(t.props, k) {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			msg := fmt.Sprintf("unknown argument '%s'", unknown[0])
			if best := catalog.Closest(unknown[0], t.props); best != "" {
				return fmt.Errorf("%s (did you mean '%s'?)", msg, best)
			}
			return fmt.Errorf("%s (arguments: %s)", msg, strings.Join(t.props, ", "))
		}
	}
	if t.schema == nil {
		return nil
	}
	err := t.schema.Validate(args)
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		return nil
	}
	return errors.New(sdkargs.Describe(ve, toolPlace))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// call makes one tools/call on the server's connection (starting it when
// needed), within ctx and the server's timeout; name is the function the
// script called. Its errors are messages for the script (without the
// function's name).
func (s *server) call(ctx context.Context, tool, name string, args map[string]any) (*mcp.CallToolResult, error) {
	c, err := s.connection(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, cancelled(ctx)
		}
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	cctx, mark := markCalls(cctx)
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	defer s.set.withProgress(ctx, &req, name)()
	withTraceContext(ctx, &req)
	defer c.flights.track(cctx)()
	res, err := callTool(ctx, cctx, c.client, req)
	refused := s.refused(c, mark, err)
	switch {
	case err == nil:
		s.healthy()
		return res, nil
	case ctx.Err() != nil:
		return nil, cancelled(ctx)
	case refused != nil:
		// Only this call's answer was refused; the connection stays.
		return nil, refused
	case cctx.Err() != nil:
		go s.checkHung(c)
		return nil, fmt.Errorf("the MCP server %s did not answer within %s (timeout of [mcp_servers.%s])", s.cfg.Name, s.cfg.Timeout, s.cfg.Name)
	case (errors.Is(err, transport.ErrTransportClosed) || c.isDead()) && c.proc == nil:
		s.died(c, "the connection ended")
		return nil, fmt.Errorf("the connection to the MCP server %s ended during the call; it is reconnected on the next call", s.cfg.Name)
	case errors.Is(err, transport.ErrTransportClosed) || c.isDead():
		s.died(c, "the process exited")
		why := "exited"
		if st := c.proc.state(); st != "" {
			why += " (" + st + ")"
		}
		return nil, fmt.Errorf("the MCP server %s %s during the call; it is restarted on the next call", s.cfg.Name, why)
	}
	var te *transport.Error
	if errors.As(err, &te) {
		why := capText(te.Err.Error(), maxErrorText)
		if errors.Is(err, transport.ErrSessionTerminated) {
			s.died(c, "its session ended")
			return nil, fmt.Errorf("the MCP server %s could not be reached: %s; it is reconnected on the next call", s.cfg.Name, why)
		}
		// This request failed (an HTTP error status, a broken response):
		// the connection is replaced only if it no longer answers, so
		// that the calls of others in flight on it go on.
		go s.checkHung(c)
		return nil, fmt.Errorf("the MCP server %s could not be reached: %s", s.cfg.Name, why)
	}
	return nil, fmt.Errorf("the MCP server %s answered with an error: %s", s.cfg.Name, capText(err.Error(), maxErrorText))
}

// withTraceContext puts the W3C trace context of the call's span
// (traceparent, tracestate) in the request's _meta, where MCP reserves
// them: every MCP upstream is told it, as a traced client would.
// Nothing when the call has no span.
func withTraceContext(ctx context.Context, req *mcp.CallToolRequest) {
	fields := telemetry.ToMeta(ctx, nil)
	if fields == nil {
		return
	}
	if req.Params.Meta == nil {
		req.Params.Meta = &mcp.Meta{}
	}
	if req.Params.Meta.AdditionalFields == nil {
		req.Params.Meta.AdditionalFields = fields
		return
	}
	maps.Copy(req.Params.Meta.AdditionalFields, fields)
}

// callTool makes the call under cctx on a goroutine of its own, so that
// the end of the execution (ctx) returns at once even while mcp-go still
// decodes a result, which it does with no context. That work is bounded
// (the cap on a message, maxBlocks) and its result dropped.
func callTool(ctx, cctx context.Context, cl *client.Client, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := cl.CallTool(cctx, req)
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func cancelled(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errors.New("the execution's time ran out")
	}
	return errors.New("cancelled")
}

// result turns a tool's result into what the script gets: structured
// content as data, else the text of text-only content, else the content
// blocks; isError raises { message, content }.
func result(name string, res *mcp.CallToolResult, maxBytes int64) *sdkcall.Response {
	blocks := func() json.RawMessage {
		content, err := json.Marshal(res.Content)
		if err != nil || res.Content == nil {
			return json.RawMessage("[]")
		}
		return content
	}
	if res.IsError {
		text := texts(res.Content)
		if text == "" {
			text = "the tool reported an error"
		}
		out := &sdkcall.Response{Fail: sdkcall.Upstream, Message: name + ": " + capText(text, maxErrorText), Content: blocks()}
		if size := int64(len(out.Content)); maxBytes > 0 && size > maxBytes {
			out.Content = json.RawMessage("[]")
			out.Message += fmt.Sprintf(" (its content is %d bytes, more than max_response_bytes (%d), and is left out)", size, maxBytes)
		}
		if d := levels(out.Content); d > sdkcall.MaxNestingDepth {
			out.Content = json.RawMessage("[]")
			out.Message += fmt.Sprintf(" (its content nests %d levels deep, more than the %d a script takes, and is left out)", d, sdkcall.MaxNestingDepth)
		}
		return out
	}
	out := &sdkcall.Response{}
	switch {
	case len(res.RawStructuredContent) > 0 && string(res.RawStructuredContent) != "null":
		out.JSON = res.RawStructuredContent
	case res.StructuredContent != nil:
		out.JSON, _ = json.Marshal(res.StructuredContent)
	case len(res.Content) == 0:
	case allText(res.Content):
		out.Text = []byte(texts(res.Content))
	default:
		out.JSON = blocks()
	}
	if size := int64(len(out.JSON) + len(out.Text)); maxBytes > 0 && size > maxBytes {
		return &sdkcall.Response{Fail: sdkcall.Upstream, Message: fmt.Sprintf(
			"%s: the result is %d bytes, more than max_response_bytes (%d)", name, size, maxBytes)}
	}
	// Deeper than a script's values may nest, the result is the server's
	// fault, said here rather than as a script error when it is read.
	if d := levels(out.JSON); d > sdkcall.MaxNestingDepth {
		return &sdkcall.Response{Fail: sdkcall.Upstream, Message: fmt.Sprintf(
			"%s: the result nests %d levels deep, more than the %d a script can take", name, d, sdkcall.MaxNestingDepth)}
	}
	return out
}

func allText(blocks []mcp.Content) bool {
	for _, b := range blocks {
		if _, ok := b.(mcp.TextContent); !ok {
			if _, ok := b.(*mcp.TextContent); !ok {
				return false
			}
		}
	}
	return true
}

// texts joins the text blocks with newlines.
func texts(blocks []mcp.Content) string {
	var parts []string
	for _, b := range blocks {
		switch t := b.(type) {
		case mcp.TextContent:
			parts = append(parts, t.Text)
		case *mcp.TextContent:
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// capText cuts s to at most n bytes, at a character boundary, and says
// how many bytes were left out.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d more bytes)", s[:cut], len(s)-cut)
}
