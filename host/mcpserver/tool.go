package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/accesslog"
	"github.com/toolscript/toolscript/host/auth"
	"github.com/toolscript/toolscript/host/effects"
	"github.com/toolscript/toolscript/host/limit"
	"github.com/toolscript/toolscript/host/luau"
	"github.com/toolscript/toolscript/host/metrics"
	"github.com/toolscript/toolscript/host/result"
	"github.com/toolscript/toolscript/host/sdkcall"
	"github.com/toolscript/toolscript/host/sdkdocs"
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
		},
		"dry_run": {
			"type": "boolean",
			"description": "Run without changing anything: writes go to a discarded overlay, unsafe sdk calls are not sent; the result lists the effects."
		},
		"plan": {
			"type": "array",
			"items": {"type": "object"},
			"description": "A dry run's effects: run for real, stopping (error kind plan) at the first unsafe effect not in this list, in order."
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
		"effects": {
			"type": "array",
			"items": {"type": "object"},
			"description": "A dry run's unsafe effects in order, or those a plan run carried out."
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

// arguments are execute_script's arguments, checked.
type arguments struct {
	script  string
	timeout time.Duration // 0 when not given
	// dryRun and plan are how the script treats its unsafe effects: a dry
	// run, or a real run held to plan (nil: a real run).
	dryRun bool
	plan   *effects.Approved
}

// effects is the effects layer of an execution with args (nil: a real
// run).
func (args arguments) effects() *effects.Run {
	switch {
	case args.dryRun:
		return effects.New(effects.DryRun)
	case args.plan != nil:
		return effects.NewPlan(args.plan)
	}
	return nil
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
	var unknown []string
	for name := range fields {
		if name != "script" && name != "timeout_ms" && name != "dry_run" && name != "plan" {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return args, argumentErrorf("unknown argument %s: execute_script takes \"script\" and, optionally, \"timeout_ms\", \"dry_run\" and \"plan\"",
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
	return args, parseEffects(fields, &args)
}

// parseEffects reads the arguments dry_run and plan.
func parseEffects(fields map[string]json.RawMessage, args *arguments) error {
	if d, ok := fields["dry_run"]; ok && string(d) != "null" {
		if err := json.Unmarshal(d, &args.dryRun); err != nil {
			return argumentErrorf(`argument "dry_run" must be a boolean, not %s`, jsonType(d))
		}
	}
	p, ok := fields["plan"]
	if !ok || string(p) == "null" {
		return nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(p, &entries); err != nil {
		return argumentErrorf(`argument "plan" must be an array: the "effects" of a dry run's result, not %s`, jsonType(p))
	}
	if args.dryRun {
		return argumentErrorf(`arguments "dry_run" and "plan" cannot be given together: a dry run makes a plan, "plan" applies one`)
	}
	plan, err := effects.PlanOf(entries)
	if err != nil {
		return argumentErrorf(`argument "plan": %v`, err)
	}
	args.plan = plan
	return nil
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

// The access log outcomes of calls that run no script: invalid arguments
// or _meta, and no slot free within the wait.
const (
	outcomeInvalid = "invalid"
	outcomeBusy    = "busy"
)

// executeScript is execute_script's handler.
func (s *Server) executeScript(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	record := accesslog.FromContext(ctx)
	args, err := parseArguments(req)
	if err != nil {
		record.SetOutcome(outcomeInvalid, "")
		// An input validation error is a tool execution error, so that the
		// model sees it and can correct the call (MCP 2025-11-25).
		return &mcp.CallToolResult{
			Content: []mcp.Content{mcp.NewTextContent("Invalid arguments: " + err.Error())},
			IsError: true,
		}, nil
	}
	if n := int64(len(args.script)); n > s.cfg.MaxScriptBytes {
		record.SetOutcome(metrics.OutcomeError, string(result.Limit))
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
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	if s.stopped != nil {
		defer context.AfterFunc(s.stopped, stop)()
	}
	if ctx.Err() != nil {
		return cancelled(), nil
	}
	user, _ := auth.UserFrom(ctx)
	release, err := s.slots.Acquire(ctx, user)
	if err != nil {
		var busy *limit.BusyError
		if errors.As(err, &busy) {
			if busy.PerUser {
				s.cfg.Metrics.Refused(metrics.LimitUserSlots)
			} else {
				s.cfg.Metrics.Refused(metrics.LimitOverallSlots)
			}
			record.SetOutcome(outcomeBusy, "")
			// A JSON-RPC error: the call was not run, and may be retried.
			return nil, err
		}
		return cancelled(), nil
	}
	defer release()

	call := &Call{User: user, MetaAuth: metaAuth(req), Script: &luau.Script{Source: []byte(args.script), Limits: limits, IO: s.ioFor(user),
		Effects: args.effects()}}
	if s.cfg.Prepare != nil {
		if err := s.cfg.Prepare(ctx, call); err != nil {
			record.SetOutcome(outcomeInvalid, "")
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("Invalid request: " + err.Error())}, IsError: true}, nil
		}
	}
	script := *call.Script
	var progress *progressReporter
	if c := callFrom(ctx); c != nil && req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
		token := req.Params.Meta.ProgressToken
		failed := false // only the first failure of a call is logged
		progress = newProgressReporter(s.cfg.ProgressInterval, func(u progressUpdate) {
			if ctx.Err() != nil { // a cancelled call's token is forgotten by the client
				return
			}
			if err := c.notify(string(mcp.MethodNotificationProgress), u.params(token)); err != nil && !failed {
				failed = true
				s.log.Printf("progress notification: %v", err)
			}
		})
		script.OnProgress = progress.report
	}
	done := s.cfg.Metrics.Start()
	res := s.cfg.Runtime.Execute(sdkcall.WithClient(ctx, s.gateway(ctx, progress)), script)
	done(res)
	if s.cfg.IO == nil {
		explainDisabledIO(res, script.Source)
	}
	if res.Failed() {
		record.SetOutcome(metrics.OutcomeError, string(res.Error.Kind))
	} else {
		record.SetOutcome(metrics.OutcomeOK, "")
	}
	if progress != nil {
		// The last notification is written before finish returns, and
		// so before the response: the client forgets the token with the
		// response. Still, a notification and
		// the response that follows it at once can still reach a client in
		// one read, and the TypeScript SDK then handles the response first
		// and reports the notification as one for an unknown token
		// (modelcontextprotocol/typescript-sdk#2580). A short pause after
		// the last notification keeps them apart.
		last := progress.finish()
		if wait := progressSettle - time.Since(last); wait > 0 && ctx.Err() == nil {
			time.Sleep(wait)
		}
	}
	return s.holdResponse(ctx, user, res), nil
}

// cancelled is the result of a call cancelled before its script ran.
func cancelled() *mcp.CallToolResult {
	return toolResult(&result.Result{Error: &result.Error{Kind: result.Timeout, Message: "execution was cancelled"}})
}

// ioFor returns the io settings of user's executions: the configured ones,
// in the user's own directory under PerUserIO.
func (s *Server) ioFor(user auth.User) *luau.IO {
	if s.cfg.IO == nil || !s.cfg.PerUserIO {
		return s.cfg.IO
	}
	io := *s.cfg.IO
	io.Dir = filepath.Join(io.Dir, user.DirName())
	return &io
}

// metaAuth returns the _meta.auth of a call as it was sent, nil if absent.
func metaAuth(req mcp.CallToolRequest) json.RawMessage {
	if req.Params.Meta == nil {
		return nil
	}
	v, ok := req.Params.Meta.AdditionalFields["auth"]
	if !ok {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
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
