package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
	"github.com/toolscript/toolscript/host/serve/accesslog"
	"github.com/toolscript/toolscript/host/serve/metrics"
)

// The checks of a script before it runs (Config.Checker): the tool
// check_script, beside the discovery tools, and execute_script's argument
// check. Both lint the script with the runtime's module (syntax is the
// VM's) and type-check it against the sdk's definitions as the discovery
// tools see them, once no upstream server is starting any more.

// A ScriptChecker checks a script before it runs: it lints it with the
// runtime's module and type-checks it against the definitions of docs
// (app gives the process's one, host/lint/scriptcheck's).
type ScriptChecker interface {
	CheckScript(ctx context.Context, docs *sdkdocs.Docs, script []byte, io bool) (*CheckReport, error)
	// MaxTypedBytes is the size of the largest script whose types it
	// checks; a larger one is unchecked.
	MaxTypedBytes() int
}

// CheckReport is what a check found.
type CheckReport struct {
	// Diagnostics are in the order of their positions.
	Diagnostics []CheckDiagnostic
	// Unchecked, when set, says why the types were not checked.
	Unchecked string
	// Refusal is the error of a run that asked for a check and may not
	// run (kind type), nil when nothing stops it.
	Refusal *result.Error
	// Warnings are what a run that asked for a check says of it.
	Warnings []string
}

// ToolCheckScript is the name of the tool that checks a script.
const ToolCheckScript = "check_script"

// maxCheckMessage bounds one diagnostic's message in check_script's
// answer (the type checker's name whole table types), and the reason the
// types were unchecked.
const maxCheckMessage = 1000

// checkOutputSchema is check_script's structured content (checkAnswer).
const checkOutputSchema = `{
	"type": "object",
	"properties": {
		"errors": {"type": "integer", "minimum": 0, "description": "How many diagnostics are errors; execute_script's check: true does not run a script with type errors."},
		"warnings": {"type": "integer", "minimum": 0},
		"diagnostics": {
			"type": "array",
			"description": "The diagnostics listed, in the order of their positions; lines and columns are 1-based, the end exclusive.",
			"items": {
				"type": "object",
				"properties": {
					"line": {"type": "integer"},
					"column": {"type": "integer"},
					"end_line": {"type": "integer"},
					"end_column": {"type": "integer"},
					"severity": {"type": "string", "enum": ["error", "warning"]},
					"rule": {"type": "string", "description": "type: Luau's type checker against the sdk's definitions; syntax and the others: toolscript's lint rules."},
					"message": {"type": "string"}
				},
				"required": ["line", "column", "end_line", "end_column", "severity", "rule", "message"]
			}
		},
		"omitted": {"type": "integer", "minimum": 0, "description": "How many diagnostics are not listed, to keep the answer within its bound."},
		"unchecked": {"type": "string", "description": "Present when the types were not checked, saying why: the script is neither accepted nor refused by them."},
		"pending": {"type": "string", "description": "Present when upstream MCP servers are still starting: their functions are not in the definitions yet."}
	},
	"required": ["errors", "warnings", "diagnostics", "omitted"]
}`

// CheckDiagnostic is one diagnostic of a check, as check_script answers
// it.
type CheckDiagnostic struct {
	Line      int `json:"line"`
	Column    int `json:"column"`
	EndLine   int `json:"end_line"`
	EndColumn int `json:"end_column"`
	// Severity is "error" or "warning".
	Severity string `json:"severity"`
	Rule     string `json:"rule"`
	Message  string `json:"message"`
}

// checkAnswer is check_script's structured content.
type checkAnswer struct {
	Errors      int               `json:"errors"`
	Warnings    int               `json:"warnings"`
	Diagnostics []CheckDiagnostic `json:"diagnostics"`
	Omitted     int               `json:"omitted"`
	Unchecked   string            `json:"unchecked,omitempty"`
	Pending     string            `json:"pending,omitempty"`
}

// addCheckScript registers check_script.
func (s *Server) addCheckScript() {
	s.mcp.AddTool(mcp.Tool{
		Name:  ToolCheckScript,
		Title: "Check a Luau script",
		Description: "Checks a script without running it: Luau's type checker against the sdk's types (a response field that does not exist, " +
			"an enum value the API does not take, a string where a number goes, a required field left out) and toolscript's lint rules " +
			"(syntax errors, unknown globals and sdk functions). Answers the diagnostics, one a line (line:column: severity rule: message); " +
			"errors are what execute_script's check: true refuses to run. A script the checker cannot finish is \"unchecked\", with why.",
		RawInputSchema: json.RawMessage(fmt.Sprintf(`{
	"type": "object",
	"properties": {"script": {"type": "string", "description": "Luau source code to check (at most %s; a script over %s is not type-checked)."}},
	"required": ["script"],
	"additionalProperties": false
}`, size(s.cfg.MaxScriptBytes), size(int64(s.cfg.Checker.MaxTypedBytes())))),
		RawOutputSchema: json.RawMessage(checkOutputSchema),
		Annotations: mcp.ToolAnnotation{
			Title:           "Check a Luau script",
			ReadOnlyHint:    mcp.ToBoolPtr(true),
			DestructiveHint: mcp.ToBoolPtr(false),
			IdempotentHint:  mcp.ToBoolPtr(true),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		},
	}, s.untilStopped(s.checkScript))
}

// checkScript is check_script's handler: the script checked, in one of
// the user's slots (a check costs the host as a short execution does),
// waited for and refused as execute_script's are (acquireSlot).
func (s *Server) checkScript(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	script, ok := args["script"].(string)
	if !ok {
		return invalid(`Invalid arguments: check_script takes "script", the Luau source to check, a string`), nil
	}
	for name := range args {
		if name != "script" {
			return invalid(fmt.Sprintf(`Invalid arguments: unknown argument %q: check_script takes "script" alone`, name)), nil
		}
	}
	if n := int64(len(script)); n > s.cfg.MaxScriptBytes {
		return invalid(fmt.Sprintf("Invalid arguments: the script is %d bytes, more than the %d bytes this server accepts", n, s.cfg.MaxScriptBytes)), nil
	}
	// The wait for starting upstream servers holds no slot.
	docs := s.checkDocs(ctx)
	release, res, err := s.acquireSlot(ctx)
	if release == nil {
		return res, err
	}
	defer release()
	out, err := s.cfg.Checker.CheckScript(ctx, docs, []byte(script), s.cfg.IO != nil)
	if err != nil {
		return invalid("The check did not finish: " + err.Error()), nil
	}
	answer := boundedAnswer(out, sdkdocs.MaxAnswer-1000)
	answer.Pending = docs.PendingNote()
	structured, err := json.Marshal(answer)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{RawStructuredContent: structured, Content: []mcp.Content{mcp.NewTextContent(checkText(answer))}}, nil
}

// boundedAnswer is out as check_script answers it: the diagnostics whose
// text and structured content together fit in budget characters listed,
// the others counted.
func boundedAnswer(out *CheckReport, budget int) checkAnswer {
	// The reason is cut as a message is: it may quote the definitions.
	answer := checkAnswer{Diagnostics: []CheckDiagnostic{}, Unchecked: truncate(out.Unchecked, maxCheckMessage)}
	used := len(answer.Unchecked) * 2
	for _, d := range out.Diagnostics {
		if d.Severity == "error" {
			answer.Errors++
		} else {
			answer.Warnings++
		}
		c := d
		c.Message = truncate(d.Message, maxCheckMessage)
		// Its line of text and its JSON, escapes included.
		item, _ := json.Marshal(c)
		cost := len(item) + len(c.Message) + 40
		if answer.Omitted > 0 || used+cost > budget {
			answer.Omitted++
			continue
		}
		used += cost
		answer.Diagnostics = append(answer.Diagnostics, c)
	}
	return answer
}

// checkText is check_script's text: a summary line, then the diagnostics
// one a line.
func checkText(a checkAnswer) string {
	var b strings.Builder
	switch {
	case a.Errors+a.Warnings == 0 && a.Unchecked == "":
		b.WriteString("No problems found.")
	default:
		fmt.Fprintf(&b, "%d error(s), %d warning(s).", a.Errors, a.Warnings)
	}
	if a.Unchecked != "" {
		b.WriteString(" Types unchecked: " + a.Unchecked + ".")
	}
	for _, d := range a.Diagnostics {
		fmt.Fprintf(&b, "\n%d:%d: %s %s: %s", d.Line, d.Column, d.Severity, d.Rule, d.Message)
	}
	if a.Omitted > 0 {
		fmt.Fprintf(&b, "\n(%d more not listed: fix those above and check again)", a.Omitted)
	}
	if a.Pending != "" {
		b.WriteString("\n" + a.Pending)
	}
	return b.String()
}

// checkDocs are the docs a check's definitions come from: the sdk's, once
// no upstream server is starting any more, or the built-ins' alone.
func (s *Server) checkDocs(ctx context.Context) *sdkdocs.Docs {
	if s.sdkDocs.Load() != nil {
		return s.awaitSDK(ctx)
	}
	return s.builtinsOnly
}

// typeChecked is the layer of execute_script that checks the script first
// when the call asks for it (check: true): with type errors it does not
// run (error kind type); unchecked, it runs with a warning. A retry that
// resumes a paused execution was checked by its first call.
func (s *Server) typeChecked(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		x := executionFrom(ctx)
		if !x.args.check || x.resume != nil {
			return next(ctx, req)
		}
		if s.cfg.Checker == nil {
			accesslog.FromContext(ctx).SetOutcome(outcomeInvalid, "")
			return invalid(`Invalid arguments: this server does not check scripts: leave out "check"`), nil
		}
		docs := s.checkDocs(ctx)
		out, err := s.cfg.Checker.CheckScript(ctx, docs, []byte(x.args.script), s.cfg.IO != nil)
		switch {
		case err != nil && ctx.Err() != nil:
			return cancelled(), nil
		case err != nil:
			// The check itself failed, not the script: it runs unchecked,
			// as one the checker could not finish does.
			x.warnings = []string{"the script was run unchecked: the check failed: " + err.Error()}
			return next(ctx, req)
		}
		if refusal := out.Refusal; refusal != nil {
			if note := docs.PendingNote(); note != "" {
				// Their functions are not in the definitions yet.
				refusal.Message += "\n" + note
			}
			accesslog.FromContext(ctx).SetOutcome(metrics.OutcomeError, string(result.Type))
			x.res = &result.Result{Error: refusal}
			return toolResult(x.res), nil
		}
		x.warnings = out.Warnings
		return next(ctx, req)
	}
}
