package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/serve/accesslog"
	"github.com/toolscript/toolscript/host/serve/metrics"
)

// arguments are execute_script's arguments, checked.
type arguments struct {
	script  string
	timeout time.Duration // 0 when not given
	// dryRun and plan are how the script treats its unsafe effects: a dry
	// run, or a real run held to plan (nil: a real run).
	dryRun bool
	plan   *effects.Approved
	// check checks the script before it runs (typeChecked).
	check bool
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

// checkArguments is the layer of execute_script that checks the call's
// arguments and the script's size, into its execution (execution.go). A wrong argument is a tool error, so that the
// model sees it and can correct the call (MCP 2025-11-25).
func (s *Server) checkArguments(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		record := accesslog.FromContext(ctx)
		args, err := parseArguments(req)
		if err != nil {
			record.SetOutcome(outcomeInvalid, "")
			return invalid("Invalid arguments: " + err.Error()), nil
		}
		x := executionFrom(ctx)
		if n := int64(len(args.script)); n > s.cfg.MaxScriptBytes {
			record.SetOutcome(metrics.OutcomeError, string(result.Limit))
			x.res = &result.Result{Error: &result.Error{Kind: result.Limit, Message: fmt.Sprintf(
				"the script is %d bytes, more than the %d bytes this server accepts", n, s.cfg.MaxScriptBytes)}}
			return toolResult(x.res), nil
		}
		x.args = args
		return next(ctx, req)
	}
}

// invalid is the tool error of a call that runs no script.
func invalid(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}, IsError: true}
}

// parseArguments checks the arguments of a call against inputSchema. It
// reads what mcp-go decoded (CallToolParams.Arguments): the arguments are
// not decoded again, except a plan's entries, which are kept as sent
// (their numbers must compare exactly with the effects').
func parseArguments(req mcp.CallToolRequest) (arguments, error) {
	var args arguments
	raw := req.Params.Arguments
	if len(req.Params.RawArguments) == 0 && raw != nil {
		// Not from the wire (an in-process call): any Go values, made
		// JSON's.
		b, err := json.Marshal(raw)
		if err != nil || json.Unmarshal(b, &raw) != nil {
			return args, argumentErrorf("arguments cannot be read: %v", err)
		}
	}
	if raw == nil {
		return args, argumentErrorf(`missing required argument "script" (the Luau source to run)`)
	}
	fields, ok := raw.(map[string]any)
	if !ok {
		return args, argumentErrorf(`arguments must be an object such as {"script": "return 1"}`)
	}
	var unknown []string
	for name := range fields {
		if name != "script" && name != "timeout_ms" && name != "dry_run" && name != "plan" && name != "check" {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return args, argumentErrorf("unknown argument %s: execute_script takes \"script\" and, optionally, \"timeout_ms\", \"dry_run\", \"plan\" and \"check\"",
			strings.Join(unknown, ", "))
	}

	script, ok := fields["script"]
	if !ok || script == nil {
		return args, argumentErrorf(`missing required argument "script" (the Luau source to run)`)
	}
	if args.script, ok = script.(string); !ok {
		return args, argumentErrorf(`argument "script" must be a string of Luau source, not %s`, valueType(script))
	}

	if t, ok := fields["timeout_ms"]; ok && t != nil {
		ms, ok := t.(float64)
		if !ok {
			return args, argumentErrorf(`argument "timeout_ms" must be an integer number of milliseconds, not %s`, valueType(t))
		}
		if ms != math.Trunc(ms) || ms < 1 {
			return args, argumentErrorf(`argument "timeout_ms" must be a positive integer number of milliseconds (got %s)`,
				strconv.FormatFloat(ms, 'g', -1, 64))
		}
		if ms > float64(math.MaxInt64/int64(time.Millisecond)) {
			args.timeout = time.Duration(math.MaxInt64)
		} else {
			args.timeout = time.Duration(ms) * time.Millisecond
		}
	}
	if err := parseCheck(fields, &args); err != nil {
		return args, err
	}
	return args, parseEffects(req, fields, &args)
}

// parseCheck reads the argument check.
func parseCheck(fields map[string]any, args *arguments) error {
	c, ok := fields["check"]
	if !ok || c == nil {
		return nil
	}
	if args.check, ok = c.(bool); !ok {
		return argumentErrorf(`argument "check" must be a boolean, not %s`, valueType(c))
	}
	return nil
}

// parseEffects reads the arguments dry_run and plan.
func parseEffects(req mcp.CallToolRequest, fields map[string]any, args *arguments) error {
	if d, ok := fields["dry_run"]; ok && d != nil {
		if args.dryRun, ok = d.(bool); !ok {
			return argumentErrorf(`argument "dry_run" must be a boolean, not %s`, valueType(d))
		}
	}
	p, ok := fields["plan"]
	if !ok || p == nil {
		return nil
	}
	if _, ok := p.([]any); !ok {
		return argumentErrorf(`argument "plan" must be an array: the "effects" of a dry run's result, not %s`, valueType(p))
	}
	if args.dryRun {
		return argumentErrorf(`arguments "dry_run" and "plan" cannot be given together: a dry run makes a plan, "plan" applies one`)
	}
	entries, err := planEntries(req, p)
	if err != nil {
		return argumentErrorf(`argument "plan" cannot be read: %v`, err)
	}
	plan, err := effects.PlanOf(entries)
	if err != nil {
		return argumentErrorf(`argument "plan": %v`, err)
	}
	args.plan = plan
	return nil
}

// planEntries returns the entries of the argument plan as the client sent
// them: from the arguments' JSON when the call came over the wire (a
// number in a call's body must keep every digit), else encoded from the
// value given in process.
func planEntries(req mcp.CallToolRequest, plan any) ([]json.RawMessage, error) {
	var sent struct {
		Plan []json.RawMessage `json:"plan"`
	}
	if len(req.Params.RawArguments) > 0 {
		return sent.Plan, json.Unmarshal(req.Params.RawArguments, &sent)
	}
	b, err := json.Marshal(plan)
	if err != nil {
		return nil, err
	}
	return sent.Plan, json.Unmarshal(b, &sent.Plan)
}

// valueType names the type of a decoded JSON value for an error message.
func valueType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case []any:
		return "an array"
	}
	return "an object"
}
