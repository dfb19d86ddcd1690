package mcpserver

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
)

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
		},
		"dry_run": {
			"type": "boolean",
			"description": "Run without changing anything: writes go to a discarded overlay, unsafe sdk calls are not sent; the result lists the effects."
		},
		"plan": {
			"type": "array",
			"items": {"type": "object"},
			"description": "A dry run's effects: run for real, stopping (error kind plan) at the first unsafe effect not in this list, in order."
		},
		"check": {
			"type": "boolean",
			"description": "Type-check the script first against the sdk's types (as check_script does): with type errors it does not run (error kind type, the errors in the message); a script the checker cannot finish runs, with a warning."
		}
	},
	"required": ["script"],
	"additionalProperties": false
}`

// outputSchema is the execution result (host/runtime/result.Result); the error
// kinds come from result.Kinds.
var outputSchema = strings.NewReplacer("KINDS", kindsJSON(),
	"RESULT_RESOURCE", whereKeptSchema("uri", "Present when the result's JSON text is larger than the server answers inline: "+
		"the resource holding the whole result (this object's fields included), readable with resources/read by the same user until it expires."),
	"RESULT_FILE", whereKeptSchema("path", "Present when the result's JSON text is larger than the server answers inline and the server "+
		"writes such results to the io directory: the file holding the whole result (this object's fields included), its path relative "+
		"to the io directory, for a later script to read until it expires."),
).Replace(outputSchemaTemplate)

// whereKeptSchema is the schema of result_resource or result_file: where
// is the field naming the place (resultResource, resultFile).
func whereKeptSchema(where, description string) string {
	d, _ := json.Marshal(description)
	return `{
			"type": "object",
			"description": ` + string(d) + `,
			"properties": {
				"` + where + `": {"type": "string"},
				"characters": {"type": "integer", "minimum": 0},
				"bytes": {"type": "integer", "minimum": 0},
				"expires": {"type": "string", "format": "date-time"}
			},
			"required": ["` + where + `", "characters", "bytes", "expires"]
		}`
}

func kindsJSON() string {
	b, _ := json.Marshal(result.Kinds)
	return string(b)
}

const outputSchemaTemplate = `{
	"type": "object",
	"properties": {
		"result": {
			"description": "The script's first return value as JSON; null when it returned nothing or failed, or when the result is too large to answer inline (result_resource or result_file names where it is kept)."
		},
		"result_resource": RESULT_RESOURCE,
		"result_file": RESULT_FILE,
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
		"effects": {
			"type": "array",
			"items": {"type": "object"},
			"description": "A dry run's unsafe effects in order, or those a plan run carried out; with [[policy]] rules, a run's unsafe effects and every denied one, each with the rules' decision and rule."
		},
		"plan_unused": {
			"type": "array",
			"items": {"type": "object"},
			"description": "The plan's entries a plan run did not carry out."
		},
		"warnings": {
			"type": "array",
			"items": {"type": "string"},
			"description": "What the host says about the execution besides its outcome, such as a recording cut short."
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

// tool declares execute_script. Its annotations follow what a script can
// do with this configuration: with io it can overwrite and remove files,
// and through the sdk it can call what the APIs and MCP servers offer. A
// script that can write (io on, or any sdk function that is not read-only:
// an OpenAPI operation of another method than GET, HEAD and OPTIONS, an MCP
// tool not annotated readOnlyHint: true) makes the tool not read-only,
// destructive and not idempotent; any API or MCP server makes it
// open-world. Without io and sdk it changes nothing outside itself.
func (s *Server) tool() mcp.Tool {
	effects := s.sdkDocs.Load().Effects()
	writes := s.cfg.IO != nil || !sdkdocs.ReadOnly(effects)
	return mcp.Tool{
		Name:            ToolName,
		Title:           "Execute a Luau script",
		Description:     s.render("tool.md") + s.sdkDescription(),
		RawInputSchema:  json.RawMessage(inputSchema),
		RawOutputSchema: json.RawMessage(outputSchema),
		Annotations: mcp.ToolAnnotation{
			Title:           "Execute a Luau script",
			ReadOnlyHint:    mcp.ToBoolPtr(!writes),
			DestructiveHint: mcp.ToBoolPtr(writes),
			IdempotentHint:  mcp.ToBoolPtr(!writes),
			OpenWorldHint:   mcp.ToBoolPtr(len(effects) > 0),
		},
	}
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

// cancelled is the result of a call cancelled before its script ran.
func cancelled() *mcp.CallToolResult {
	return toolResult(&result.Result{Error: &result.Error{Kind: result.Timeout, Message: "execution was cancelled"}})
}

// toolResult presents an execution result: as structured content and as
// JSON text; on failure also as an error whose first text is the message.
func toolResult(res *result.Result) *mcp.CallToolResult {
	return toolResultOf(res, res.JSON())
}

// toolResultOf is toolResult with the result's JSON text made already.
func toolResultOf(res *result.Result, text []byte) *mcp.CallToolResult {
	out := &mcp.CallToolResult{RawStructuredContent: text, IsError: res.Failed()}
	if res.Failed() {
		out.Content = []mcp.Content{mcp.NewTextContent(ErrorPrefix + res.Error.Message), mcp.NewTextContent(string(text))}
	} else {
		out.Content = []mcp.Content{mcp.NewTextContent(string(text))}
	}
	return out
}
