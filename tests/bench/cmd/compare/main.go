// Command compare measures toolscript's performance targets in one run.
//
// It runs every benchmark script of tests/bench N times on each engine that
// is available:
//
//   - wasm: upstream Luau compiled to WebAssembly, under wazero, through
//     luau.Runtime.Execute (a pooled runtime; each execution gets a fresh,
//     ready instance, as in a warm process);
//   - v8: the very same module under Node.js's V8 (tests/bench/v8/run.mjs,
//     a fresh instance per execution, timing ts_init and ts_run after an
//     untimed warm-up run), if node is installed: what separates it from the
//     wasm column is the wasm engine alone;
//   - native: the same Luau source, patches and shim compiled natively
//     (bin/luau-native, built by luau-build/native/build.sh), timing ts_init
//     and ts_run in a fresh process per execution;
//   - gopher-lua: a fresh lua.LState per execution;
//   - lua5.1: Debian's reference interpreter, if installed.
//
// It checks that every engine computes the same checksum, prints the median
// (or, with -stat min, the fastest) times and the ratios, then measures the
// latency of `return 1` executions in a warm process and the whole-process
// time of `toolscript run` on a hello script, and says which targets are
// met. It always exits 0 unless it cannot run at all: it is a report.
//
// Usage: go run ./tests/bench/cmd/compare [-n 5] [-run REGEXP]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/tests/bench"
	"github.com/toolscript/toolscript/wasm"
)

// The targets the project promises.
const (
	targetReturn1    = 100 * time.Microsecond
	targetGeomean    = 2.0
	targetHello      = 60 * time.Millisecond
	refillPause      = 3 * time.Millisecond
	moduleImportPath = "github.com/toolscript/toolscript"
)

type options struct {
	n              int
	filter         *regexp.Regexp
	root           string
	native         string
	wasm           string
	lua51          string
	node           string
	v8Flags        []string
	v8Warmups      int
	engines        map[string]bool
	latencySamples int
	helloRuns      int
}

func main() {
	var o options
	var filter string
	flag.IntVar(&o.n, "n", 5, "executions of each script on each engine")
	stat := flag.String("stat", "median", "what the table reports of each script's executions: median or min (steadier on a busy machine)")
	flag.StringVar(&filter, "run", "", "only scripts whose name matches this regular expression")
	flag.StringVar(&o.root, "root", "", "the repository's root (default: found from the working directory)")
	flag.StringVar(&o.native, "native", "", "the native harness (default: ROOT/bin/luau-native)")
	flag.StringVar(&o.wasm, "wasm", "", "measure this build of the Luau module instead of the embedded wasm/luau.wasm")
	flag.StringVar(&o.lua51, "lua51", "lua5.1", "the reference Lua 5.1 interpreter")
	flag.StringVar(&o.node, "node", "node", "the Node.js that runs the module under V8 (engine v8)")
	v8Flags := flag.String("v8-flags", "--no-liftoff", "V8 flags for the v8 engine, space-separated (--no-liftoff: TurboFan code only)")
	flag.IntVar(&o.v8Warmups, "v8-warmups", 1, "untimed runs of each script on v8 before the timed ones (V8 compiles lazily and in tiers)")
	engines := flag.String("engines", "wasm,v8,native,gopher-lua,lua5.1", "the engines to run, comma-separated")
	flag.IntVar(&o.latencySamples, "latency-samples", 300, "executions of `return 1` for the latency median")
	flag.IntVar(&o.helloRuns, "hello-runs", 20, "runs of `toolscript run hello` after one warm-up")
	flag.Parse()
	if o.n < 1 {
		fatalf("-n must be at least 1")
	}
	if o.v8Warmups < 0 {
		fatalf("-v8-warmups must not be negative")
	}
	o.v8Flags = strings.Fields(*v8Flags)
	var err error
	if o.filter, err = regexp.Compile(filter); err != nil {
		fatalf("-run: %v", err)
	}
	if o.root == "" {
		if o.root, err = findRoot(); err != nil {
			fatalf("%v", err)
		}
	}
	switch *stat {
	case "median":
		summarize, statName = median, "medians"
	case "min":
		summarize, statName = slices.Min[[]time.Duration], "fastest of each"
	default:
		fatalf("-stat: want median or min, not %q", *stat)
	}
	o.engines = map[string]bool{}
	for _, e := range strings.Split(*engines, ",") {
		switch e = strings.TrimSpace(e); e {
		case "wasm", "v8", "native", "gopher-lua", "lua5.1":
			o.engines[e] = true
		default:
			fatalf("-engines: unknown engine %q", e)
		}
	}
	if o.native == "" {
		o.native = filepath.Join(o.root, "bin", "luau-native")
	}
	report(o)
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "compare: "+format+"\n", args...)
	os.Exit(2)
}

// findRoot walks up from the working directory to this module's go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(data), []byte("module "+moduleImportPath+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root (the go.mod of " + moduleImportPath + "); use -root")
		}
		dir = parent
	}
}

// measurement is one engine's runs of one script.
type measurement struct {
	elapsed  time.Duration
	checksum string
	err      error
	skipped  bool
}

type row struct {
	script                        bench.Script
	wasm, v8, native, gopher, lua measurement
	agree                         bool
	// wasm/native, v8/native, wasm/v8 and wasm/gopher-lua, valid when
	// both engines ran and every engine agrees on the checksum.
	nativeRatio, v8Ratio, wasmV8Ratio, gopherRatio float64
	nativeValid, v8Valid, wasmV8Valid, gopherValid bool
	disagreement, referenceSum                     string
}

// engines lists the row's measurements in the order of the table.
func (r *row) engines() []namedMeasurement {
	return []namedMeasurement{{"wasm", r.wasm}, {"v8", r.v8}, {"native", r.native}, {"gopher-lua", r.gopher}, {"lua5.1", r.lua}}
}

type namedMeasurement struct {
	name string
	m    measurement
}

// engineSet is what the engines other than wazero's need, and which of
// them run.
type engineSet struct {
	engines  map[string]bool
	nativeOK bool
	native   string
	luaPath  string
	luaOK    bool
	// module is -wasm's module (nil: the embedded one).
	module []byte
	v8     *v8Engine
}

// findEngines finds the engines o selects, with a note for each one
// skipped or measured differently.
func findEngines(o options, dir string) (engineSet, []string) {
	var notes []string
	e := engineSet{engines: o.engines, native: o.native}
	if !o.engines["native"] {
		notes = append(notes, "native: not selected (-engines).")
	} else if info, err := os.Stat(o.native); err == nil && !info.IsDir() {
		e.nativeOK = true
	} else {
		notes = append(notes, fmt.Sprintf("native: %s not found; run `make native` (luau-build/native/build.sh). Native columns skipped.", o.native))
	}
	luaPath, err := exec.LookPath(o.lua51)
	e.luaPath, e.luaOK = luaPath, err == nil && o.engines["lua5.1"]
	if !o.engines["lua5.1"] {
		notes = append(notes, "lua5.1: not selected (-engines).")
	} else if !e.luaOK {
		notes = append(notes, fmt.Sprintf("lua5.1: %q not found (Debian package lua5.1); its column is skipped.", o.lua51))
	}
	if !o.engines["gopher-lua"] {
		notes = append(notes, "gopher-lua: not selected (-engines).")
	}
	if o.wasm != "" {
		if e.module, err = os.ReadFile(o.wasm); err != nil {
			fatalf("-wasm: %v", err)
		}
		notes = append(notes, "wasm: measured "+o.wasm+", not the embedded wasm/luau.wasm.")
	}
	// V8 runs the very module wazero does: the embedded one (or -wasm's),
	// written out, not whatever wasm/luau.wasm holds by now.
	if !o.engines["v8"] {
		notes = append(notes, "v8: not selected (-engines).")
	} else if e.v8, err = newV8Engine(o, dir, e.module); err != nil {
		notes = append(notes, fmt.Sprintf("v8: %v; its columns are skipped.", err))
	} else {
		notes = append(notes, fmt.Sprintf("v8: %s, the same luau.wasm, a fresh instance per execution, %d untimed warm-up run(s) per script; times are ts_init+ts_run, as native's.",
			e.v8.version, o.v8Warmups))
	}
	return e, notes
}

// measure runs script s n times on each engine that runs (a skipped one
// is marked so) and checks that they agree.
func (e engineSet) measure(ctx context.Context, rt *luau.Runtime, o options, dir string, s bench.Script) *row {
	file := filepath.Join(dir, s.Name+".lua")
	if err := os.WriteFile(file, s.Source, 0o644); err != nil {
		fatalf("%v", err)
	}
	r := &row{script: s}
	for _, step := range []struct {
		name string
		runs bool
		m    *measurement
		run  func() measurement
	}{
		{"wasm", e.engines["wasm"], &r.wasm, func() measurement { return runWasm(ctx, rt, s.Source, o.n) }},
		{"v8", e.v8 != nil, &r.v8, func() measurement { return e.v8.run(file, o.n) }},
		{"native", e.nativeOK, &r.native, func() measurement { return runNative(e.native, file, o.n) }},
		{"gopher-lua", e.engines["gopher-lua"], &r.gopher, func() measurement { return runGopher(s.Source, o.n) }},
		{"lua5.1", e.luaOK, &r.lua, func() measurement { return runLua51(e.luaPath, file, o.n) }},
	} {
		if step.name == "wasm" {
			fmt.Fprintf(os.Stderr, "compare: %s: wasm", s.Name)
		} else {
			fmt.Fprint(os.Stderr, ", "+step.name)
		}
		if step.runs {
			*step.m = step.run()
		} else {
			step.m.skipped = true
		}
	}
	fmt.Fprintln(os.Stderr)
	r.check()
	return r
}

func report(o options) {
	ctx := context.Background()
	fmt.Printf("toolscript performance comparison: %s, %s/%s, %d CPUs, %d executions per script and engine (%s)\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), o.n, statName)

	dir, err := os.MkdirTemp("", "toolscript-compare-")
	if err != nil {
		fatalf("%v", err)
	}
	defer os.RemoveAll(dir)

	eng, notes := findEngines(o, dir)
	module := eng.module
	rt, err := luau.New(ctx, luau.Config{PoolSize: 1, Module: module})
	if err != nil {
		fatalf("luau.New: %v", err)
	}
	defer rt.Close(ctx)
	time.Sleep(20 * time.Millisecond) // the pool fills

	var rows []*row
	for _, s := range bench.Scripts() {
		if !o.filter.MatchString(s.Name) {
			continue
		}
		rows = append(rows, eng.measure(ctx, rt, o, dir, s))
	}

	geomean, geomeanN, v8Geomean, v8GeomeanN := printTable(rows)
	fmt.Println()

	// Latency of `return 1` in a warm process.
	var latency, p90 time.Duration
	latErr := errors.New("not selected (-engines)")
	switch {
	case !o.engines["wasm"]:
	case o.latencySamples < 1:
		latErr = errors.New("-latency-samples is 0")
	default:
		latency, p90, latErr = measureReturn1(ctx, module, o.latencySamples)
	}
	if latErr != nil {
		fmt.Printf("return 1 latency: not measured: %v\n", latErr)
	} else {
		fmt.Printf("return 1 latency (warm, PoolSize 2, %d executions, %v pause between): median %.1f µs, p90 %.1f µs\n",
			o.latencySamples, refillPause, us(latency), us(p90))
	}

	// Whole-process time of `toolscript run hello`.
	hello, helloNote := measureHello(o, dir)
	if helloNote != "" {
		notes = append(notes, helloNote)
	} else {
		fmt.Printf("toolscript run hello (whole process, %d runs after a warm-up): median %.1f ms\n", o.helloRuns, ms(hello))
	}

	if len(notes) > 0 {
		fmt.Println("\nNotes:")
		for _, n := range notes {
			fmt.Println("  - " + n)
		}
	}

	fmt.Println("\nTargets:")
	if latErr != nil {
		fmt.Printf("  [?]    return-1 median <= %v: not measured (%v)\n", targetReturn1, latErr)
	} else {
		fmt.Printf("  %s return-1 median <= %v: %.1f µs\n", mark(latency <= targetReturn1), targetReturn1, us(latency))
	}
	if geomeanN == 0 {
		fmt.Printf("  [?]    geomean wasm/native <= %.1f: not measured (no native results)\n", targetGeomean)
	} else {
		fmt.Printf("  %s geomean wasm/native <= %.1f: %.2f over %d scripts\n", mark(geomean <= targetGeomean), targetGeomean, geomean, geomeanN)
	}
	if v8GeomeanN > 0 {
		fmt.Printf("         (for reference, not a target: the same module under V8, geomean v8/native %.2f over %d scripts)\n", v8Geomean, v8GeomeanN)
	}
	slower := []string{}
	compared := 0
	for _, r := range rows {
		if r.gopherValid {
			compared++
			if r.gopherRatio >= 1 {
				slower = append(slower, fmt.Sprintf("%s (%.2fx)", r.script.Name, r.gopherRatio))
			}
		}
	}
	switch {
	case compared == 0:
		fmt.Println("  [?]    wasm faster than gopher-lua on every script: not measured")
	case len(slower) == 0:
		fmt.Printf("  %s wasm faster than gopher-lua on every script (%d of %d)\n", mark(true), compared, compared)
	default:
		fmt.Printf("  %s wasm faster than gopher-lua on every script: slower on %s\n", mark(false), strings.Join(slower, ", "))
	}
	if helloNote != "" {
		fmt.Printf("  [?]    toolscript run hello <= %v: not measured\n", targetHello)
	} else {
		fmt.Printf("  %s toolscript run hello <= %v: %.1f ms\n", mark(hello <= targetHello), targetHello, ms(hello))
	}
}

func mark(ok bool) string {
	if ok {
		return "[met]  "
	}
	return "[MISSED]"
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// summarize reduces a script's execution times to the number the table
// shows (-stat); statName says which.
var (
	summarize = median
	statName  = "medians"
)

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(math.Ceil(p*float64(len(s))))-1)]
}

// consistent returns the checksum shared by all runs, or an error.
func consistent(sums []string) (string, error) {
	for _, s := range sums[1:] {
		if s != sums[0] {
			return "", fmt.Errorf("runs disagree: %s and %s", sums[0], s)
		}
	}
	return sums[0], nil
}

func runWasm(ctx context.Context, rt *luau.Runtime, source []byte, n int) measurement {
	runtime.GC()
	var times []time.Duration
	var sums []string
	for range n {
		start := time.Now()
		res := rt.Execute(ctx, luau.Script{Source: source})
		times = append(times, time.Since(start))
		if res.Error != nil {
			return measurement{err: res.Error}
		}
		sum, err := bench.CanonicalJSON(res.Value)
		if err != nil {
			return measurement{err: err}
		}
		sums = append(sums, sum)
		time.Sleep(refillPause) // the pool refills: the next execution finds a ready instance
	}
	sum, err := consistent(sums)
	return measurement{elapsed: summarize(times), checksum: sum, err: err}
}

// nativeReport is what bin/luau-native prints.
type nativeReport struct {
	Compiler string          `json:"compiler"`
	TimesNS  []int64         `json:"times_ns"`
	Kind     int             `json:"kind"`
	Result   json.RawMessage `json:"result"`
}

// runReport runs cmd and decodes the JSON report it writes on standard
// output into rep; without one, the error names the command and carries
// what it wrote on standard error.
func runReport(cmd *exec.Cmd, rep any) error {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if jerr := json.Unmarshal(out, rep); jerr != nil {
		if err == nil {
			err = jerr
		}
		return fmt.Errorf("%s: %v %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func runNative(harness, file string, n int) measurement {
	var rep nativeReport
	if err := runReport(exec.Command(harness, file, fmt.Sprint(n)), &rep); err != nil {
		return measurement{err: err}
	}
	if rep.Kind != 0 {
		return measurement{err: fmt.Errorf("native: kind %d: %s", rep.Kind, rep.Result)}
	}
	sum, err := bench.CanonicalJSON(rep.Result)
	if err != nil {
		return measurement{err: err}
	}
	var times []time.Duration
	for _, t := range rep.TimesNS {
		times = append(times, time.Duration(t))
	}
	if len(times) == 0 {
		return measurement{err: errors.New("native: no times reported")}
	}
	return measurement{elapsed: summarize(times), checksum: sum}
}

func runGopher(source []byte, n int) measurement {
	runtime.GC()
	var times []time.Duration
	var sums []string
	for range n {
		start := time.Now()
		sum, err := bench.RunGopherLua(source)
		times = append(times, time.Since(start))
		if err != nil {
			return measurement{err: err}
		}
		sums = append(sums, sum)
	}
	runtime.GC()
	sum, err := consistent(sums)
	return measurement{elapsed: summarize(times), checksum: sum, err: err}
}

func runLua51(lua, file string, n int) measurement {
	var times []time.Duration
	var sums []string
	for range n {
		cmd := exec.Command(lua, "-e", bench.Lua51Wrapper)
		cmd.Env = append(os.Environ(), "TOOLSCRIPT_BENCH_SCRIPT="+file)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return measurement{err: fmt.Errorf("lua5.1: %v: %s", err, strings.TrimSpace(stderr.String()))}
		}
		secs, sum, err := bench.ParseLua51Output(out)
		if err != nil {
			return measurement{err: err}
		}
		times = append(times, time.Duration(secs*float64(time.Second)))
		sums = append(sums, sum)
	}
	sum, err := consistent(sums)
	return measurement{elapsed: summarize(times), checksum: sum, err: err}
}

// v8Engine runs the module under Node.js's V8 (tests/bench/v8/run.mjs).
type v8Engine struct {
	node, script, module string
	flags                []string
	warmups              int
	// version is what run.mjs says it runs on: Node's and V8's versions.
	version string
}

// newV8Engine finds node and run.mjs, writes the module wazero runs
// (module, or the embedded one when nil) into dir and checks that node can
// run it.
func newV8Engine(o options, dir string, module []byte) (*v8Engine, error) {
	node, err := exec.LookPath(o.node)
	if err != nil {
		return nil, fmt.Errorf("%q not found (Node.js 20 or later)", o.node)
	}
	e := &v8Engine{node: node, script: filepath.Join(o.root, "tests", "bench", "v8", "run.mjs"), flags: o.v8Flags, warmups: o.v8Warmups}
	if _, err := os.Stat(e.script); err != nil {
		return nil, err
	}
	if module == nil {
		module = wasm.Binary
	}
	e.module = filepath.Join(dir, "luau.wasm")
	if err := os.WriteFile(e.module, module, 0o644); err != nil {
		return nil, err
	}
	// A trial run: an old node (no node:wasi) or a bad flag shows here, once.
	trial := filepath.Join(dir, "v8-trial.lua")
	if err := os.WriteFile(trial, []byte("return 1"), 0o644); err != nil {
		return nil, err
	}
	rep, err := e.exec(trial, 1, 0)
	if err != nil {
		return nil, err
	}
	e.version = rep.Engine
	return e, nil
}

// v8Report is what run.mjs prints.
type v8Report struct {
	Engine  string            `json:"engine"`
	TimesNS []int64           `json:"times_ns"`
	Kind    int               `json:"kind"`
	Results []json.RawMessage `json:"results"`
}

func (e *v8Engine) exec(file string, n, warmups int) (*v8Report, error) {
	args := append([]string{"--no-warnings"}, e.flags...)
	args = append(args, e.script, e.module, file, fmt.Sprint(n), fmt.Sprint(warmups))
	var rep v8Report
	if err := runReport(exec.Command(e.node, args...), &rep); err != nil {
		return nil, err
	}
	if rep.Kind != 0 {
		return nil, fmt.Errorf("kind %d: %s", rep.Kind, bytes.Join(rawBytes(rep.Results), []byte(", ")))
	}
	if len(rep.TimesNS) == 0 || len(rep.TimesNS) != len(rep.Results) {
		return nil, fmt.Errorf("%d times and %d results reported", len(rep.TimesNS), len(rep.Results))
	}
	return &rep, nil
}

func rawBytes(raws []json.RawMessage) [][]byte {
	out := make([][]byte, len(raws))
	for i, r := range raws {
		out[i] = r
	}
	return out
}

func (e *v8Engine) run(file string, n int) measurement {
	rep, err := e.exec(file, n, e.warmups)
	if err != nil {
		return measurement{err: err}
	}
	var times []time.Duration
	var sums []string
	for i, t := range rep.TimesNS {
		sum, err := bench.CanonicalJSON(rep.Results[i])
		if err != nil {
			return measurement{err: err}
		}
		times = append(times, time.Duration(t))
		sums = append(sums, sum)
	}
	sum, err := consistent(sums)
	return measurement{elapsed: summarize(times), checksum: sum, err: err}
}

// check compares the checksums of the engines that ran and computes the
// ratios of the pairs of engines that both ran, when every engine agrees.
func (r *row) check() {
	r.agree = true
	var parts []string
	for _, m := range r.engines() {
		if m.m.skipped || m.m.err != nil {
			continue
		}
		if r.referenceSum == "" {
			r.referenceSum = m.m.checksum
		} else if m.m.checksum != r.referenceSum {
			r.agree = false
		}
		parts = append(parts, m.name+"="+m.m.checksum)
	}
	if !r.agree {
		r.disagreement = strings.Join(parts, " ")
		return
	}
	ok := func(m measurement) bool { return !m.skipped && m.err == nil && m.elapsed > 0 }
	ratio := func(a, b measurement) (float64, bool) {
		if ok(a) && ok(b) {
			return float64(a.elapsed) / float64(b.elapsed), true
		}
		return 0, false
	}
	r.nativeRatio, r.nativeValid = ratio(r.wasm, r.native)
	r.v8Ratio, r.v8Valid = ratio(r.v8, r.native)
	r.wasmV8Ratio, r.wasmV8Valid = ratio(r.wasm, r.v8)
	r.gopherRatio, r.gopherValid = ratio(r.wasm, r.gopher)
}

func cell(m measurement) string {
	switch {
	case m.skipped:
		return "-"
	case m.err != nil:
		return "error"
	default:
		return fmt.Sprintf("%.1f", ms(m.elapsed))
	}
}

// geomean accumulates a geometric mean of ratios.
type geomean struct {
	logSum float64
	n      int
}

// add adds the ratio if valid and returns its cell.
func (g *geomean) add(ratio float64, valid bool) string {
	if !valid {
		return "-"
	}
	g.logSum += math.Log(ratio)
	g.n++
	return fmt.Sprintf("%.2f", ratio)
}

func (g *geomean) value() float64 {
	if g.n == 0 {
		return 0
	}
	return math.Exp(g.logSum / float64(g.n))
}

func (g *geomean) cell() string {
	if g.n == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", g.value())
}

// printTable prints the results as a Markdown table and returns the
// geometric means of wasm/native and of v8/native over the scripts that
// have them, with their counts.
func printTable(rows []*row) (wasmNative float64, wasmNativeN int, v8Native float64, v8NativeN int) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| script\t wasm ms\t v8 ms\t native ms\t gopher-lua ms\t lua5.1 ms\t wasm/native\t v8/native\t wasm/v8\t wasm/gopher-lua\t checksum\t")
	fmt.Fprintln(tw, "|---\t---:\t---:\t---:\t---:\t---:\t---:\t---:\t---:\t---:\t---\t")
	var native, v8, wasmV8, gopher geomean
	var problems []string
	for _, r := range rows {
		nr := native.add(r.nativeRatio, r.nativeValid)
		vr := v8.add(r.v8Ratio, r.v8Valid)
		wv := wasmV8.add(r.wasmV8Ratio, r.wasmV8Valid)
		gr := gopher.add(r.gopherRatio, r.gopherValid)
		sum := r.referenceSum
		if !r.agree {
			sum = "MISMATCH"
			problems = append(problems, fmt.Sprintf("%s: checksums differ: %s", r.script.Name, r.disagreement))
		}
		for _, m := range r.engines() {
			if m.m.err != nil {
				problems = append(problems, fmt.Sprintf("%s on %s: %v", r.script.Name, m.name, m.m.err))
			}
		}
		fmt.Fprintf(tw, "| %s\t %s\t %s\t %s\t %s\t %s\t %s\t %s\t %s\t %s\t %s\t\n",
			r.script.Name, cell(r.wasm), cell(r.v8), cell(r.native), cell(r.gopher), cell(r.lua), nr, vr, wv, gr, sum)
	}
	if native.n+v8.n+wasmV8.n+gopher.n > 0 {
		fmt.Fprintf(tw, "| geomean\t \t \t \t \t \t %s\t %s\t %s\t %s\t \t\n", native.cell(), v8.cell(), wasmV8.cell(), gopher.cell())
	}
	tw.Flush()
	for _, p := range problems {
		fmt.Println("PROBLEM: " + p)
	}
	return native.value(), native.n, v8.value(), v8.n
}

// measureReturn1 returns the median and 90th percentile latency of whole
// executions of `return 1` on a warm runtime whose pool refills between
// executions.
func measureReturn1(ctx context.Context, module []byte, samples int) (time.Duration, time.Duration, error) {
	rt, err := luau.New(ctx, luau.Config{PoolSize: 2, Module: module})
	if err != nil {
		return 0, 0, err
	}
	defer rt.Close(ctx)
	script := luau.Script{Source: []byte("return 1")}
	time.Sleep(20 * time.Millisecond)
	runtime.GC()
	var times []time.Duration
	for i := range samples + 10 {
		start := time.Now()
		res := rt.Execute(ctx, script)
		elapsed := time.Since(start)
		if res.Error != nil {
			return 0, 0, res.Error
		}
		if i >= 10 { // the first few warm the process
			times = append(times, elapsed)
		}
		time.Sleep(refillPause)
	}
	return median(times), percentile(times, 0.9), nil
}

// measureHello builds cmd/toolscript, runs it once on a hello script to
// warm wazero's compilation cache, then times o.helloRuns whole runs. A
// non-empty note says why it was not measured.
func measureHello(o options, dir string) (time.Duration, string) {
	if o.helloRuns < 1 {
		return 0, "toolscript run hello: not measured (-hello-runs 0)."
	}
	pkg := filepath.Join(o.root, "cmd", "toolscript")
	if matches, _ := filepath.Glob(filepath.Join(pkg, "*.go")); len(matches) == 0 {
		return 0, "toolscript run hello: ./cmd/toolscript does not exist yet; not measured."
	}
	bin := filepath.Join(dir, "toolscript")
	build := exec.Command("go", "build", "-o", bin, "./cmd/toolscript")
	build.Dir = o.root
	if out, err := build.CombinedOutput(); err != nil {
		return 0, fmt.Sprintf("toolscript run hello: go build ./cmd/toolscript failed: %v: %s", err, strings.TrimSpace(string(out)))
	}
	// The project's own hello script when there is one, else a minimal one.
	hello := filepath.Join(o.root, "examples", "hello.luau")
	if _, err := os.Stat(hello); err != nil {
		hello = filepath.Join(dir, "hello.luau")
		if err := os.WriteFile(hello, []byte("print(\"hello\")\nreturn \"hello\"\n"), 0o644); err != nil {
			return 0, err.Error()
		}
	}
	var times []time.Duration
	for i := range o.helloRuns + 1 {
		cmd := exec.Command(bin, "run", hello)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		elapsed := time.Since(start)
		if err != nil {
			return 0, fmt.Sprintf("toolscript run hello: `toolscript run %s` failed: %v: %s", hello, err, strings.TrimSpace(string(out)))
		}
		if i > 0 { // the first run warms the compilation cache
			times = append(times, elapsed)
		}
	}
	return median(times), ""
}
