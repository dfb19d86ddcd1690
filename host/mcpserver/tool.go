package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/luau"
	"github.com/toolscript/toolscript/host/result"
)

// progressSettle is the least time between a progress notification and the
// response to its call.
const progressSettle = 5 * time.Millisecond

// ErrorPrefix begins the text of every failed execution.
const ErrorPrefix = "Script execution error: "

// inputSchema is execute_script's input. timeout_ms declares no maximum:
// larger values are capped, not refused.
const inputSchema = `{
	"type": "object",
	"properties": {
		"script": {
			"type": "string",
			"description": "Luau source code to run. Return a value to get it back as JSON."
		},
		"timeout_ms": {
			"type": "integer",
			"minimum": 1,
			"description": "Wall-clock limit in milliseconds. Optional; values above the server's maximum are capped to it."
		}
	},
	"required": ["script"],
	"additionalProperties": false
}`

// outputSchema is the execution result (host/result.Result); the error
// kinds come from result.Kinds.
var outputSchema = strings.Replace(outputSchemaTemplate, "KINDS", kindsJSON(), 1)

func kindsJSON() string {
	b, _ := json.Marshal(result.Kinds)
	return string(b)
}

const outputSchemaTemplate = `{
	"type": "object",
	"properties": {
		"result": {
			"description": "The script's first return value as JSON; null when it returned nothing or failed."
		},
		"logs": {
			"type": "array",
			"items": {"type": "string"},
			"description": "One entry per print() call."
		},
		"files_touched": {
			"type": "array",
			"description": "The final state of every file the script wrote, appended to or removed, sorted by name.",
			"items": {
				"type": "object",
				"properties": {
					"name": {"type": "string", "description": "Path relative to the io directory."},
					"op": {"type": "string", "enum": ["write", "append", "remove"]},
					"bytes": {"type": "integer", "minimum": 0, "description": "Size on disk at the end; absent for remove."}
				},
				"required": ["name", "op"]
			}
		},
		"error": {
			"type": "object",
			"description": "Present when the execution failed.",
			"properties": {
				"kind": {"type": "string", "enum": KINDS},
				"message": {"type": "string"},
				"line": {"type": "integer", "description": "The script line the error was raised at, when known."}
			},
			"required": ["kind", "message"]
		}
	},
	"required": ["result", "logs", "files_touched"]
}`

// tool declares execute_script. Without io a script cannot change anything
// outside itself, so the tool is then read-only and idempotent; with io it
// can overwrite and remove files. It never reaches beyond the machine.
func (s *Server) tool() mcp.Tool {
	io := s.cfg.IO != nil
	return mcp.Tool{
		Name:            ToolName,
		Title:           "Execute a Luau script",
		Description:     s.render("tool.md"),
		RawInputSchema:  json.RawMessage(inputSchema),
		RawOutputSchema: json.RawMessage(outputSchema),
		Annotations: mcp.ToolAnnotation{
			Title:           "Execute a Luau script",
			ReadOnlyHint:    mcp.ToBoolPtr(!io),
			DestructiveHint: mcp.ToBoolPtr(io),
			IdempotentHint:  mcp.ToBoolPtr(!io),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		},
	}
}

// arguments are execute_script's arguments, checked.
type arguments struct {
	script  string
	timeout time.Duration // 0 when not given
}

// argumentError is a missing, mistyped or unknown argument.
type argumentError struct{ msg string }

func (e *argumentError) Error() string { return e.msg }

func argumentErrorf(format string, args ...any) error {
	return &argumentError{fmt.Sprintf(format, args...)}
}

// parseArguments checks the arguments of a call against inputSchema.
func parseArguments(req mcp.CallToolRequest) (arguments, error) {
	var args arguments
	raw := req.Params.RawArguments
	if len(raw) == 0 {
		// Not from the wire (an in-process call): encode what was given.
		b, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return args, argumentErrorf("arguments cannot be read: %v", err)
		}
		raw = b
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return args, argumentErrorf(`missing required argument "script" (the Luau source to run)`)
	}
	var fields map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return args, argumentErrorf(`arguments must be an object such as {"script": "return 1"}`)
	}
	if reason, ok := fields[invalidArgumentsKey]; ok {
		var msg string
		_ = json.Unmarshal(reason, &msg)
		return args, argumentErrorf("%s", msg)
	}
	var unknown []string
	for name := range fields {
		if name != "script" && name != "timeout_ms" {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return args, argumentErrorf("unknown argument %s: execute_script takes \"script\" and, optionally, \"timeout_ms\"",
			strings.Join(unknown, ", "))
	}

	script, ok := fields["script"]
	if !ok || string(script) == "null" {
		return args, argumentErrorf(`missing required argument "script" (the Luau source to run)`)
	}
	if err := json.Unmarshal(script, &args.script); err != nil {
		return args, argumentErrorf(`argument "script" must be a string of Luau source, not %s`, jsonType(script))
	}

	if t, ok := fields["timeout_ms"]; ok && string(t) != "null" {
		var ms float64
		if err := json.Unmarshal(t, &ms); err != nil {
			return args, argumentErrorf(`argument "timeout_ms" must be an integer number of milliseconds, not %s`, jsonType(t))
		}
		if ms != math.Trunc(ms) || ms < 1 {
			return args, argumentErrorf(`argument "timeout_ms" must be a positive integer number of milliseconds (got %s)`, t)
		}
		if ms > float64(math.MaxInt64/int64(time.Millisecond)) {
			args.timeout = time.Duration(math.MaxInt64)
		} else {
			args.timeout = time.Duration(ms) * time.Millisecond
		}
	}
	return args, nil
}

// jsonType names the type of a JSON value for an error message.
func jsonType(v json.RawMessage) string {
	switch v := bytes.TrimSpace(v); {
	case len(v) == 0:
		return "nothing"
	case v[0] == '"':
		return "a string"
	case v[0] == '{':
		return "an object"
	case v[0] == '[':
		return "an array"
	case v[0] == 't' || v[0] == 'f':
		return "a boolean"
	case v[0] == 'n':
		return "null"
	}
	return "a number"
}

// executeScript is execute_script's handler.
func (s *Server) executeScript(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, err := parseArguments(req)
	if err != nil {
		// An input validation error is a tool execution error, so that the
		// model sees it and can correct the call (MCP 2025-11-25).
		return &mcp.CallToolResult{
			Content: []mcp.Content{mcp.NewTextContent("Invalid arguments: " + err.Error())},
			IsError: true,
		}, nil
	}
	if n := int64(len(args.script)); n > s.cfg.MaxScriptBytes {
		return toolResult(&result.Result{Error: &result.Error{Kind: result.Limit, Message: fmt.Sprintf(
			"the script is %d bytes, more than the %d bytes this server accepts", n, s.cfg.MaxScriptBytes)}}), nil
	}
	limits := s.cfg.Limits
	if args.timeout > 0 {
		limits.Timeout = args.timeout
	}
	limits.Timeout = min(limits.Timeout, s.cfg.MaxTimeout)

	// A call cancelled before it got here never starts, nor one cancelled
	// while it waits for a slot.
	key := req.Header.Get(requestKeyHeader)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	c, ok := s.requests.start(key, stop)
	if !ok {
		return toolResult(&result.Result{Error: &result.Error{Kind: result.Timeout, Message: "execution was cancelled"}}), nil
	}
	defer s.requests.end(key, c)
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return toolResult(&result.Result{Error: &result.Error{Kind: result.Timeout, Message: "execution was cancelled"}}), nil
	}
	defer func() { <-s.slots }()

	script := luau.Script{Source: []byte(args.script), Limits: limits, IO: s.cfg.IO}
	var progress *progressReporter
	if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
		token := req.Params.Meta.ProgressToken
		progress = newProgressReporter(s.cfg.ProgressInterval, func(u progressUpdate) {
			if ctx.Err() == nil { // a cancelled call's token is forgotten by the client
				s.notifyProgress(token, u)
			}
		})
		script.OnProgress = progress.report
	}
	res := s.cfg.Runtime.Execute(ctx, script)
	if s.cfg.IO == nil {
		explainDisabledIO(res, script.Source)
	}
	if progress != nil {
		// A notification and the response that follows it at once can reach
		// a client in one read, and the TypeScript SDK then handles the
		// response first and reports the notification as one for an unknown
		// token (modelcontextprotocol/typescript-sdk#2580). A short pause
		// after the last notification keeps them apart.
		if wait := progressSettle - time.Since(progress.finish()); wait > 0 && ctx.Err() == nil {
			time.Sleep(wait)
		}
	}
	return toolResult(res), nil
}

// toolResult presents an execution result: as structured content and as
// JSON text; on failure also as an error whose first text is the message.
func toolResult(res *result.Result) *mcp.CallToolResult {
	text := res.JSON()
	out := &mcp.CallToolResult{RawStructuredContent: text, IsError: res.Failed()}
	if res.Failed() {
		out.Content = []mcp.Content{mcp.NewTextContent(ErrorPrefix + res.Error.Message), mcp.NewTextContent(string(text))}
	} else {
		out.Content = []mcp.Content{mcp.NewTextContent(string(text))}
	}
	return out
}

// notifyProgress writes one notifications/progress message.
func (s *Server) notifyProgress(token mcp.ProgressToken, u progressUpdate) {
	n := progressNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Method:  string(mcp.MethodNotificationProgress),
		Params:  progressParamsWire{ProgressToken: token, progressUpdate: u},
	}
	if err := s.out.writeJSON(n); err != nil {
		s.log.Printf("progress notification: %v", err)
	}
}
