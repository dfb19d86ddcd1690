package luau

import (
	"bufio"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// abiHeader is the shim's side of the ABI.
const abiHeader = "../../../luau-build/shim/abi.h"

// abiConstants pairs each constant of abi.h with the Go constant that
// mirrors it. goName is the constant's name in abi.go, or "" for one the
// ABI shares with another name (the SDKFailure values the envelope
// carries).
var abiConstants = []struct {
	header string
	goName string
	value  int64
}{
	{"TS_ABI_VERSION", "abiVersion", abiVersion},
	{"TS_KIND_OK", "kindOK", kindOK},
	{"TS_KIND_SYNTAX", "kindSyntax", kindSyntax},
	{"TS_KIND_RUNTIME", "kindRuntime", kindRuntime},
	{"TS_KIND_MEMORY", "kindMemory", kindMemory},
	{"TS_KIND_LIMIT", "kindLimit", kindLimit},
	{"TS_KIND_IO", "kindIO", kindIO},
	{"TS_KIND_INTERNAL", "kindInternal", kindInternal},
	{"TS_KIND_UPSTREAM", "kindUpstream", kindUpstream},
	{"TS_FLAG_IO", "flagIO", flagIO},
	{"TS_FLAG_EFFECTS", "flagEffects", flagEffects},
	{"TS_OUT_SIZE", "outSize", outSize},
	{"TS_INPUT_SIZE", "inputSize", inputSize},
	{"TS_LUA_ERRMEM", "luaErrMem", luaErrMem},
	{"TS_ABORT_OUT_OF_MEMORY", "abortOutOfMemory", abortOutOfMemory},
	{"TS_JSON_MAX_DEPTH", "MaxNestingDepth", MaxNestingDepth},
	{"TS_IO_FAILED", "ioFailed", ioFailed},
	{"TS_IO_OVER_LIMIT", "ioOverLimit", ioOverLimit},
	{"TS_IO_STAT_MISSING", "statMissing", statMissing},
	{"TS_IO_STAT_FILE", "statFile", statFile},
	{"TS_IO_STAT_DIRECTORY", "statDirectory", statDirectory},
	{"TS_IO_STAT_LINK", "statLink", statLink},
	{"TS_IO_STAT_OTHER", "statOther", statOther},
	{"TS_IO_STAT_RECORD", "statRecord", statRecord},
	{"TS_IO_GREP_HEADER", "grepHeader", grepHeader},
	{"TS_SEEK_SET", "seekSet", seekSet},
	{"TS_SEEK_CUR", "seekCur", seekCur},
	{"TS_SEEK_END", "seekEnd", seekEnd},
	{"TS_SDK_DATA_ONLY", "sdkDataOnly", sdkDataOnly},
	{"TS_SDK_ENVELOPE_IN_PLACE", "envelopeInPlace", envelopeInPlace},
	{"TS_SDK_ENVELOPE_HEADER", "envelopeHeader", envelopeHeader},
	{"TS_SDK_OK", "", int64(sdkcall.OK)},
	{"TS_SDK_ARGUMENT", "", int64(sdkcall.Argument)},
	{"TS_SDK_UPSTREAM", "", int64(sdkcall.Upstream)},
	{"TS_SDK_LIMIT", "", int64(sdkcall.Limit)},
	{"TS_JSON_MAX_DEPTH", "", sdkcall.MaxNestingDepth},
	{"TS_SDK_BODY_NONE", "bodyNone", bodyNone},
	{"TS_SDK_BODY_JSON", "bodyJSON", bodyJSON},
	{"TS_SDK_BODY_TEXT", "bodyText", bodyText},
	{"TS_SDK_BODY_DRY_RUN", "bodyDryRun", bodyDryRun},
	{"TS_SDK_BATCH_HEADER", "batchHeader", batchHeader},
	{"TS_LINT_OUT_SIZE", "lintOutSize", lintOutSize},
	{"TS_LINT_RECORD_HEADER", "lintRecordHeader", lintRecordHeader},
}

var defineLine = regexp.MustCompile(`^#define\s+(TS_[A-Z0-9_]+)\s+(\S+)\s*$`)

// parseABIHeader returns the constants abi.h defines. Every line of it is
// blank, a comment, #pragma once or `#define TS_NAME integer`: anything
// else is an error, so that a constant cannot hide from the check.
func parseABIHeader(r io.Reader) (map[string]int64, error) {
	defs := map[string]int64{}
	scan := bufio.NewScanner(r)
	for n := 1; scan.Scan(); n++ {
		line := strings.TrimSpace(scan.Text())
		if line == "" || strings.HasPrefix(line, "//") || line == "#pragma once" {
			continue
		}
		m := defineLine.FindStringSubmatch(line)
		if m == nil {
			return nil, &headerError{n, line, "not `#define TS_NAME integer`"}
		}
		v, err := strconv.ParseInt(m[2], 0, 64)
		if err != nil {
			return nil, &headerError{n, line, err.Error()}
		}
		if _, dup := defs[m[1]]; dup {
			return nil, &headerError{n, line, "defined twice"}
		}
		defs[m[1]] = v
	}
	return defs, scan.Err()
}

type headerError struct {
	line   int
	text   string
	reason string
}

func (e *headerError) Error() string {
	return "abi.h:" + strconv.Itoa(e.line) + ": " + e.reason + ": " + e.text
}

// TestABIHeaderMatchesGo checks that abi.h and abi.go define the same
// constants with the same values, and nothing on one side only.
func TestABIHeaderMatchesGo(t *testing.T) {
	f, err := os.Open(abiHeader)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defs, err := parseABIHeader(f)
	if err != nil {
		t.Fatal(err)
	}

	paired := map[string]bool{}
	goPaired := map[string]bool{}
	for _, c := range abiConstants {
		paired[c.header] = true
		if c.goName != "" {
			goPaired[c.goName] = true
		}
		v, ok := defs[c.header]
		if !ok {
			t.Errorf("%s (Go %s = %d) is not defined in abi.h", c.header, c.goName, c.value)
			continue
		}
		if v != c.value {
			t.Errorf("abi.h defines %s %d, Go's %s is %d", c.header, v, c.goName, c.value)
		}
	}
	for name, v := range defs {
		if !paired[name] {
			t.Errorf("abi.h defines %s %d, which no Go constant mirrors (add it to abi.go and abiConstants)", name, v)
		}
	}
	for _, name := range abiGoConstants(t) {
		if !goPaired[name] {
			t.Errorf("abi.go defines %s, which abi.h lacks (add it to abi.h and abiConstants)", name)
		}
	}
}

// abiGoConstants lists the constants abi.go declares.
func abiGoConstants(t *testing.T) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), "abi.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			t.Errorf("abi.go holds a declaration that is not a constant, at %d", decl.Pos())
			continue
		}
		for _, spec := range gen.Specs {
			for _, name := range spec.(*ast.ValueSpec).Names {
				names = append(names, name.Name)
			}
		}
	}
	return names
}

// TestParseABIHeaderRefusesOtherLines checks that the header check sees
// every line: a constant in another form would escape it.
func TestParseABIHeaderRefusesOtherLines(t *testing.T) {
	for _, text := range []string{
		"const int TS_X = 1;",
		"#define TS_X (1 << 2)",
		"#define ts_lower 1",
		"#define TS_X 1\n#define TS_X 2",
		"enum { TS_X = 1 };",
	} {
		if defs, err := parseABIHeader(strings.NewReader(text)); err == nil {
			t.Errorf("%q parsed as %v", text, defs)
		}
	}
	defs, err := parseABIHeader(strings.NewReader("#pragma once\n// c\n\n#define TS_A 0x80000000\n#define TS_B -2\n"))
	if err != nil || defs["TS_A"] != 1<<31 || defs["TS_B"] != -2 || len(defs) != 2 {
		t.Errorf("got %v, %v", defs, err)
	}
}

// TestSeekWhenceIsGos checks that io_seek's whence is io.Seek*'s, which
// the sandbox's Seek takes as it is.
func TestSeekWhenceIsGos(t *testing.T) {
	if seekSet != io.SeekStart || seekCur != io.SeekCurrent || seekEnd != io.SeekEnd {
		t.Fatal("TS_SEEK_* differ from io.Seek*")
	}
}

// versionModule is a minimal wasm module with one page of memory that
// exports ts_abi_version returning version (0..63), or no such function
// when version is negative.
func versionModule(version int) []byte {
	m := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	m = append(m, 0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f) // type: () -> i32
	m = append(m, 0x03, 0x02, 0x01, 0x00)                   // function 0 of type 0
	m = append(m, 0x05, 0x03, 0x01, 0x00, 0x01)             // memory: min 1 page
	if version >= 0 {
		name := "ts_abi_version"
		m = append(m, 0x07, byte(2+len(name)+2), 0x01, byte(len(name)))
		m = append(m, name...)
		m = append(m, 0x00, 0x00) // function 0
	}
	m = append(m, 0x0a, 0x06, 0x01, 0x04, 0x00, 0x41, byte(version&0x3f), 0x0b) // i32.const version
	return m
}

func TestABIVersionChecked(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		module  []byte
		newErr  string // New fails with this
		execErr string // or Execute does
	}{
		{"no version", versionModule(-1), fmt.Sprintf("luau.wasm has no ABI version (it does not export ts_abi_version), this host speaks %d: rebuild the wasm", abiVersion), ""},
		{"another version", versionModule(abiVersion + 1), "", fmt.Sprintf("luau.wasm has ABI version %d, this host speaks %d: rebuild the wasm", abiVersion+1, abiVersion)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(ctx, Config{Module: tt.module, CacheDir: "off"})
			if tt.newErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.newErr) {
					t.Fatalf("New: %v, want %q", err, tt.newErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close(ctx)
			res := r.Execute(ctx, Script{Source: []byte("return 1")})
			if res.Error == nil || !strings.Contains(res.Error.Message, tt.execErr) {
				t.Fatalf("Execute: %+v, want %q", res.Error, tt.execErr)
			}
		})
	}
}
