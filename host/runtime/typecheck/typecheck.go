// Package typecheck type-checks Luau scripts against definitions (a
// .d.luau text, such as the sdk's) with upstream Luau's own type checker:
// the embedded module wasm/check (luau-build/build-check.sh) under wazero,
// in an instance of its own that shares nothing with the instances scripts
// run in.
//
// A Checker compiles the module only when a check is first asked for (with
// the compilation cache the Luau runtime uses), loads its definitions once
// into one instance and checks scripts there one at a time, in strict
// mode. Everything is bounded: the definitions' size, the script's size,
// the instance's memory, the time of each check and of the load. A check
// that cannot finish (a throw inside the checker, which traps, memory run
// out, its time limit) leaves the script unchecked (an *UncheckedError):
// the instance is dropped and the next check starts a fresh one.
package typecheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/toolscript/toolscript/host/platform/cachedir"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/wasm/check"
)

// Defaults of Config.
const (
	DefaultMaxDefinitionsBytes = 8 << 20
	DefaultMaxSourceBytes      = 1 << 20
	DefaultMaxMemoryBytes      = 512 << 20
	DefaultCheckTimeout        = 10 * time.Second
	DefaultLoadTimeout         = 60 * time.Second
	// MaxDiagnostics is how many diagnostics a check returns at most.
	MaxDiagnostics = 500
)

// Config configures a Checker. Zero values take the defaults.
type Config struct {
	// CacheDir holds wazero's compilation cache, as luau.Config.CacheDir:
	// empty the user cache directory, "off" none.
	CacheDir string
	// CacheWarning is told, once, that the cache cannot be used.
	CacheWarning *cachedir.Warning
	// MaxDefinitionsBytes caps the definitions Load accepts.
	MaxDefinitionsBytes int
	// MaxSourceBytes caps the scripts Check accepts.
	MaxSourceBytes int
	// MaxMemoryBytes caps the checker instance's linear memory (GitHub's
	// API takes about 60 MiB).
	MaxMemoryBytes uint64
	// CheckTimeout bounds one check; LoadTimeout the loading of the
	// definitions into a fresh instance.
	CheckTimeout time.Duration
	LoadTimeout  time.Duration
	// Module is the checker module; nil means the embedded check.Binary.
	Module []byte
}

func (c Config) withDefaults() Config {
	if c.MaxDefinitionsBytes <= 0 {
		c.MaxDefinitionsBytes = DefaultMaxDefinitionsBytes
	}
	if c.MaxSourceBytes <= 0 {
		c.MaxSourceBytes = DefaultMaxSourceBytes
	}
	if c.MaxMemoryBytes == 0 {
		c.MaxMemoryBytes = DefaultMaxMemoryBytes
	}
	if c.CheckTimeout <= 0 {
		c.CheckTimeout = DefaultCheckTimeout
	}
	if c.LoadTimeout <= 0 {
		c.LoadTimeout = DefaultLoadTimeout
	}
	if c.Module == nil {
		c.Module = check.Binary
	}
	return c
}

// Diagnostic is one error the checker found; lines and columns are
// 1-based, the end exclusive.
type Diagnostic struct {
	Line      int `json:"line"`
	Column    int `json:"column"`
	EndLine   int `json:"end_line"`
	EndColumn int `json:"end_column"`
	// Code is Luau's error code; Category names the kind of error the
	// shim tells apart (unknown_property, missing_properties,
	// type_mismatch, count_mismatch, unknown_symbol,
	// optional_value_access, syntax, ...; "other" for the rest).
	Code     int    `json:"code"`
	Category string `json:"category"`
	Message  string `json:"message"`
}

// ErrUnchecked is what an *UncheckedError is (errors.Is).
var ErrUnchecked = errors.New("script unchecked")

// UncheckedError says that a check could not finish: the script is
// neither accepted nor rejected.
type UncheckedError struct {
	// Reason says why, in words.
	Reason string
	Err    error
}

func (e *UncheckedError) Error() string {
	if e.Err != nil {
		// wazero's errors carry the wasm stack trace on the lines after.
		first, _, _ := strings.Cut(e.Err.Error(), "\n")
		return fmt.Sprintf("type check: script unchecked: %s: %s", e.Reason, first)
	}
	return "type check: script unchecked: " + e.Reason
}

func (e *UncheckedError) Unwrap() []error { return []error{ErrUnchecked, e.Err} }

// ErrDefinitions is what an error about the definitions themselves is
// (errors.Is): too large, or not loadable.
var ErrDefinitions = errors.New("type definitions")

// Checker checks scripts against one set of definitions. Its methods are
// safe to call concurrently; checks run one at a time.
type Checker struct {
	cfg Config

	mu          sync.Mutex
	runtime     wazero.Runtime
	compiled    wazero.CompiledModule
	cache       wazero.CompilationCache
	module      api.Module
	definitions []byte
}

// New returns a Checker; it compiles nothing until a check is asked for.
func New(ctx context.Context, cfg Config) (*Checker, error) {
	cfg = cfg.withDefaults()
	if pages := (cfg.MaxMemoryBytes + 65535) / 65536; pages > 65536 {
		return nil, fmt.Errorf("typecheck: memory limit %d bytes exceeds the 4 GiB a wasm32 module can address", cfg.MaxMemoryBytes)
	}
	return &Checker{cfg: cfg}, nil
}

// Load sets the definitions (a .d.luau text) later checks run against.
// Definitions over Config.MaxDefinitionsBytes are refused. They are loaded
// into the checker at the next check, whose error says when they do not
// load.
func (c *Checker) Load(definitions []byte) error {
	if len(definitions) > c.cfg.MaxDefinitionsBytes {
		return fmt.Errorf("%w: %d bytes is over the limit of %d bytes", ErrDefinitions, len(definitions), c.cfg.MaxDefinitionsBytes)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.definitions = append([]byte(nil), definitions...)
	c.dropInstance(context.Background())
	return nil
}

// Check type-checks source (strict mode) against the definitions and
// returns what the checker found, at most MaxDiagnostics. An
// *UncheckedError says that the check could not finish.
func (c *Checker) Check(ctx context.Context, source string) ([]Diagnostic, error) {
	if len(source) > c.cfg.MaxSourceBytes {
		return nil, &UncheckedError{Reason: fmt.Sprintf("the script's %d bytes are over the checker's limit of %d bytes", len(source), c.cfg.MaxSourceBytes)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ensureInstance(ctx); err != nil {
		return nil, err
	}
	checkCtx, cancel := context.WithTimeout(ctx, c.cfg.CheckTimeout)
	defer cancel()
	out, err := c.call(checkCtx, "tc_check", []byte(source))
	if err != nil {
		return nil, c.unchecked(ctx, checkCtx, "checking the script", c.cfg.CheckTimeout, err)
	}
	return decodeDiagnostics(out)
}

// Close releases the instance and the compiled module.
func (c *Checker) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropInstance(ctx)
	var err error
	if c.runtime != nil {
		err = c.runtime.Close(ctx)
		c.runtime, c.compiled = nil, nil
	}
	if c.cache != nil {
		err = errors.Join(err, c.cache.Close(ctx))
		c.cache = nil
	}
	return err
}

// ensureInstance compiles the module if it is not yet, and instantiates it
// with the definitions loaded if there is no live instance.
func (c *Checker) ensureInstance(ctx context.Context) error {
	if c.module != nil && !c.module.IsClosed() {
		return nil
	}
	c.module = nil
	if err := c.ensureCompiled(ctx); err != nil {
		return err
	}
	mod, err := c.runtime.InstantiateModule(ctx, c.compiled, wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions("_initialize"))
	if err != nil {
		return c.unchecked(ctx, ctx, "starting the checker", c.cfg.LoadTimeout, err)
	}
	c.module = mod
	if len(c.definitions) == 0 {
		return nil
	}
	loadCtx, cancel := context.WithTimeout(ctx, c.cfg.LoadTimeout)
	defer cancel()
	out, err := c.call(loadCtx, "tc_load_definitions", c.definitions)
	if err != nil {
		return c.unchecked(ctx, loadCtx, "loading the definitions", c.cfg.LoadTimeout, err)
	}
	if out.status == 0 {
		diags, _ := decodeDiagnostics(out)
		c.dropInstance(ctx)
		return fmt.Errorf("%w do not load: %s", ErrDefinitions, firstMessage(diags))
	}
	return nil
}

// ensureCompiled makes the runtime and compiles the module, with the
// compilation cache when it can be used.
func (c *Checker) ensureCompiled(ctx context.Context) error {
	if c.compiled != nil {
		return nil
	}
	dir, cache, err := luau.OpenCache(c.cfg.CacheDir)
	if err != nil && !errors.Is(err, cachedir.ErrNoUserCacheDir) {
		c.cfg.CacheWarning.Warn("the compiled-module cache", err)
	}
	err = c.compile(ctx, cache)
	if err != nil && cache != nil {
		c.cfg.CacheWarning.Warn("the compiled-module cache "+dir, err)
		err = c.compile(ctx, nil)
	}
	return err
}

// compile makes a runtime (with cache when not nil) and compiles the
// module in it; on an error nothing is left open.
func (c *Checker) compile(ctx context.Context, cache wazero.CompilationCache) error {
	pages := uint32((c.cfg.MaxMemoryBytes + 65535) / 65536)
	rtConfig := wazero.NewRuntimeConfig().
		WithMemoryLimitPages(pages).
		WithCloseOnContextDone(true) // a runaway check is stopped wherever it is
	if cache != nil {
		rtConfig = rtConfig.WithCompilationCache(cache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, rtConfig)
	fail := func(what string, err error) error {
		r.Close(ctx)
		if cache != nil {
			cache.Close(ctx)
		}
		return fmt.Errorf("typecheck: %s: %w", what, err)
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		return fail("instantiating WASI", err)
	}
	compiled, err := r.CompileModule(ctx, c.cfg.Module)
	if err != nil {
		return fail("compiling the checker module", err)
	}
	c.runtime, c.compiled, c.cache = r, compiled, cache
	return nil
}

// callResult is what tc_check and tc_load_definitions answer: their
// status and the result buffer's bytes.
type callResult struct {
	status int32
	text   []byte
}

// call copies input into the instance, calls the export fn with it and
// reads the result buffer.
func (c *Checker) call(ctx context.Context, fn string, input []byte) (callResult, error) {
	mod := c.module
	res, err := mod.ExportedFunction("tc_alloc").Call(ctx, uint64(len(input)+1))
	if err != nil {
		return callResult{}, err
	}
	ptr := uint32(res[0])
	if ptr == 0 || !mod.Memory().Write(ptr, input) {
		return callResult{}, fmt.Errorf("no memory for %d bytes of input", len(input))
	}
	res, err = mod.ExportedFunction(fn).Call(ctx, uint64(ptr), uint64(len(input)))
	if err != nil {
		return callResult{}, err
	}
	status := int32(res[0])
	if _, err := mod.ExportedFunction("tc_free").Call(ctx, uint64(ptr)); err != nil {
		return callResult{}, err
	}
	addr, err := mod.ExportedFunction("tc_result_addr").Call(ctx)
	if err != nil {
		return callResult{}, err
	}
	size, err := mod.ExportedFunction("tc_result_len").Call(ctx)
	if err != nil {
		return callResult{}, err
	}
	text, ok := mod.Memory().Read(uint32(addr[0]), uint32(size[0]))
	if !ok {
		return callResult{}, fmt.Errorf("the result (%d bytes at %#x) is outside the checker's memory", size[0], addr[0])
	}
	return callResult{status: status, text: append([]byte(nil), text...)}, nil
}

// unchecked words a call that did not finish and drops the instance, which
// is closed or in an unknown state.
func (c *Checker) unchecked(ctx, callCtx context.Context, what string, limit time.Duration, err error) error {
	thrown := c.thrown(ctx)
	c.dropInstance(ctx)
	var exit *sys.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeDeadlineExceeded && ctx.Err() == nil:
		return &UncheckedError{Reason: fmt.Sprintf("%s ran over its time limit of %s", what, limit)}
	case callCtx.Err() != nil:
		return &UncheckedError{Reason: what + " was stopped", Err: callCtx.Err()}
	case thrown != "":
		return &UncheckedError{Reason: fmt.Sprintf("%s failed inside the checker: it threw %s", what, thrown), Err: err}
	default:
		return &UncheckedError{Reason: what + " failed inside the checker", Err: err}
	}
}

// thrown is what the checker's last throw threw (a C++ type's mangled
// name, such as St9bad_alloc), read from an instance that trapped on it;
// "" when nothing was or the instance is closed.
func (c *Checker) thrown(ctx context.Context) string {
	if c.module == nil || c.module.IsClosed() {
		return ""
	}
	fn := c.module.ExportedFunction("tc_thrown")
	if fn == nil {
		return ""
	}
	res, err := fn.Call(ctx)
	if err != nil {
		return ""
	}
	name, ok := c.module.Memory().Read(uint32(res[0]), 128)
	if !ok {
		return ""
	}
	if end := bytes.IndexByte(name, 0); end >= 0 {
		name = name[:end]
	}
	return strings.ToValidUTF8(string(name), "?")
}

func (c *Checker) dropInstance(ctx context.Context) {
	if c.module != nil {
		c.module.Close(ctx)
		c.module = nil
	}
}

func decodeDiagnostics(out callResult) ([]Diagnostic, error) {
	var diags []Diagnostic
	if err := json.Unmarshal(out.text, &diags); err != nil {
		return nil, &UncheckedError{Reason: "the checker's answer is not JSON", Err: err}
	}
	if len(diags) > MaxDiagnostics {
		diags = diags[:MaxDiagnostics]
	}
	return diags, nil
}

func firstMessage(diags []Diagnostic) string {
	if len(diags) == 0 {
		return "the checker names no reason"
	}
	d := diags[0]
	return fmt.Sprintf("line %d: %s (and %d more)", d.Line, d.Message, len(diags)-1)
}
