// Package bench holds toolscript's CPU benchmarks: Luau scripts written in
// the common subset of Lua 5.1 and Luau, so that the same file runs on the
// wasm build under wazero, on a native build of the same Luau source
// (luau-build/native), on gopher-lua and on the reference Lua 5.1. Every
// script returns a checksum; engines that disagree on it are not compared.
//
// go test -bench . ./tests/bench runs the Go benchmarks; the comparison of
// every engine in one run is tests/bench/cmd/compare (make bench).
package bench

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

//go:embed scripts/*.lua
var scriptFiles embed.FS

// Script is one benchmark script.
//
// Every script takes one optional argument: "small" shrinks its work to a
// few milliseconds, for correctness tests. The checksums differ from the
// full runs'.
type Script struct {
	// Name is the file name without .lua.
	Name string
	// File is the path relative to this package's directory.
	File   string
	Source []byte
}

// Scripts returns the benchmark scripts, sorted by name.
func Scripts() []Script {
	entries, err := fs.ReadDir(scriptFiles, "scripts")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	var scripts []Script
	for _, e := range entries {
		file := path.Join("scripts", e.Name())
		src, err := scriptFiles.ReadFile(file)
		if err != nil {
			panic(err)
		}
		scripts = append(scripts, Script{Name: strings.TrimSuffix(e.Name(), ".lua"), File: file, Source: src})
	}
	return scripts
}

// gopherOptions configure gopher-lua's states. Its value stack (the
// "registry") is fixed at 5,120 slots by default, which table.concat of a
// 10,000-element table overflows; it may grow here, as an embedder running
// such scripts would let it.
var gopherOptions = lua.Options{RegistrySize: lua.RegistrySize, RegistryMaxSize: 1 << 20}

// RunGopherLua runs source in a fresh gopher-lua state with the standard
// libraries (as every toolscript execution gets a fresh Luau state), args
// as `...`, and returns the canonical form of its first return value.
func RunGopherLua(source []byte, args ...string) (string, error) {
	L := lua.NewState(gopherOptions)
	defer L.Close()
	top := L.GetTop()
	fn, err := L.LoadString(string(source))
	if err != nil {
		return "", err
	}
	L.Push(fn)
	for _, a := range args {
		L.Push(lua.LString(a))
	}
	if err := L.PCall(len(args), lua.MultRet, nil); err != nil {
		return "", err
	}
	if L.GetTop() == top {
		return "nil", nil
	}
	switch v := L.Get(top + 1).(type) {
	case lua.LNumber:
		return CanonicalNumber(float64(v)), nil
	case lua.LString:
		return strconv.Quote(string(v)), nil
	case *lua.LNilType:
		return "nil", nil
	case lua.LBool:
		return strconv.FormatBool(bool(v)), nil
	default:
		return "", fmt.Errorf("the script returned a %s; checksums are numbers or strings", v.Type())
	}
}

// CanonicalNumber formats a checksum so that engines compare equal exactly
// when the numbers are equal.
func CanonicalNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// CanonicalJSON returns the canonical form of a result as toolscript (and
// the native harness) report it: JSON text.
func CanonicalJSON(raw []byte) (string, error) {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return "nil", nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("result %q is not JSON: %w", raw, err)
	}
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return "", err
		}
		return CanonicalNumber(f), nil
	case string:
		return strconv.Quote(v), nil
	case bool:
		return strconv.FormatBool(v), nil
	default:
		return "", fmt.Errorf("result %s is not a number or a string", raw)
	}
}

// Lua51Wrapper is a chunk for the reference lua5.1 interpreter, run as
// `lua5.1 -e WRAPPER` with the script's path in the TOOLSCRIPT_BENCH_SCRIPT
// environment variable. It times loading and running the script with
// os.clock (processor time: Lua 5.1 has no finer clock; the scripts are
// single-threaded and do no I/O, so it matches wall time on an idle
// machine) and prints the seconds taken, then the checksum.
const Lua51Wrapper = `
local path = os.getenv("TOOLSCRIPT_BENCH_SCRIPT")
local t0 = os.clock()
local chunk = assert(loadfile(path))
local r = chunk()
local t1 = os.clock()
io.write(string.format("%.9f\n", t1 - t0))
if type(r) == "number" then
  io.write("n", string.format("%.17g", r))
elseif type(r) == "string" then
  io.write("s", r)
else
  io.write("o", tostring(r))
end
`

// ParseLua51Output reads what Lua51Wrapper prints: the seconds taken and
// the canonical checksum.
func ParseLua51Output(out []byte) (seconds float64, checksum string, err error) {
	first, rest, ok := strings.Cut(string(out), "\n")
	if !ok || rest == "" {
		return 0, "", fmt.Errorf("unexpected lua5.1 output %q", out)
	}
	if seconds, err = strconv.ParseFloat(first, 64); err != nil {
		return 0, "", fmt.Errorf("unexpected lua5.1 time %q", first)
	}
	switch value := rest[1:]; rest[0] {
	case 'n':
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, "", fmt.Errorf("unexpected lua5.1 number %q", value)
		}
		return seconds, CanonicalNumber(f), nil
	case 's':
		return seconds, strconv.Quote(value), nil
	default:
		return seconds, value, nil
	}
}
