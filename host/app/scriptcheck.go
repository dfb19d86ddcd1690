package app

import (
	"context"

	"github.com/toolscript/toolscript/host/lint/scriptcheck"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
)

// scriptChecker is the MCP server's checks (mcpserver.ScriptChecker):
// the process's one scriptcheck.Checker, linting with the serving
// runtime's module.
type scriptChecker struct {
	checker *scriptcheck.Checker
	rt      *luau.Runtime
}

func (c scriptChecker) CheckScript(ctx context.Context, docs *sdkdocs.Docs, script []byte, io bool) (*mcpserver.CheckReport, error) {
	out, err := c.checker.Check(ctx, c.rt, docs, scriptcheck.Script{Source: script, IO: io})
	if err != nil {
		return nil, err
	}
	return checkReport(out), nil
}

func (scriptChecker) MaxTypedBytes() int { return scriptcheck.MaxSourceBytes }

// checkReport is out as the MCP server answers it.
func checkReport(out *scriptcheck.Outcome) *mcpserver.CheckReport {
	report := &mcpserver.CheckReport{Unchecked: out.Unchecked, Refusal: out.Refusal(), Warnings: out.Warnings()}
	for _, d := range out.Diagnostics {
		report.Diagnostics = append(report.Diagnostics, mcpserver.CheckDiagnostic{Line: d.Line, Column: d.Column, EndLine: d.EndLine, EndColumn: d.EndColumn,
			Severity: string(d.Severity), Rule: d.Rule, Message: d.Message})
	}
	return report
}
