// Package luau runs Luau scripts in the embedded WebAssembly build of upstream
// Luau under wazero.
//
// A Runtime compiles the module once per process (with wazero's on-disk
// compilation cache) and runs every script in a fresh instance that is
// discarded afterwards: nothing survives from one execution to the next.
// Only the first instance runs the module's initialisation; the others start
// from an image of its memory taken before it ran anything (image.go): on
// Linux a private copy-on-write mapping of it (memimage.Template), elsewhere
// a copy.
// Executions are safe to run concurrently; a small pool of ready, never-used
// instances keeps the latency of a warm process low.
package luau

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/toolscript/toolscript/internal/wasmrewrite"
	"github.com/toolscript/toolscript/wasm"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/contract/telemetry"
	"github.com/toolscript/toolscript/host/platform/cachedir"
	"github.com/toolscript/toolscript/host/runtime/memimage"
	"github.com/toolscript/toolscript/host/runtime/result"
)

// Config configures a Runtime.
type Config struct {
	// CacheDir holds wazero's compilation cache. Empty means the user cache
	// directory (toolscript/wazero under os.UserCacheDir); "off" disables it.
	CacheDir string
	// CacheWarning is told, once, that the cache cannot be used; nil tells
	// nobody. The module is compiled without it then.
	CacheWarning *cachedir.Warning
	// MaxMemoryBytes caps each instance's linear memory: the Luau heap plus
	// the compiler, the C stack and allocator overhead. Default 256 MiB.
	MaxMemoryBytes uint64
	// StopOnContextDone makes a call into the module return as soon as its
	// context is done, wherever the module is: what a Linter runs (the
	// parser, the checks, the compiler) reaches no Luau interrupt. It costs
	// a check at every function entry and loop of the module, which a
	// script's run does without (it stops through Luau's interrupt).
	StopOnContextDone bool
	// PoolSize is how many fresh instances are kept ready. Zero means none:
	// right for a process that runs one script.
	PoolSize int
	// Module is the Luau module to run. Nil means the embedded wasm.Binary;
	// another build of luau-build (different flags, say) can be measured
	// against it. Its function table is made to fill on demand at load
	// when it does not already (loadModule).
	Module []byte
	// SDK lists the functions of every script's sdk table; nil leaves it
	// empty. Scripts call them through Script.SDK.
	SDK *sdkcall.Manifest
	// Tracer traces each execution (its span, its approval waits and io
	// effects: trace.go); nil traces nothing.
	Tracer *telemetry.Tracer

	// eagerTable has the module's function table filled at instantiation,
	// as clang's output asks (wasmrewrite.EagerTable: tests and benchmarks
	// measure the table filled on demand against it).
	eagerTable bool
}

// DefaultMaxMemoryBytes is the default cap on an instance's linear memory.
const DefaultMaxMemoryBytes = 256 << 20

// MemoryOverheadBytes is what an instance needs beside the Luau heap: the
// module's data and C stack, the compiler, allocator overhead. A Runtime
// accepts scripts whose heap limit leaves this much of MaxMemoryBytes free.
const MemoryOverheadBytes = 32 << 20

// MaxMemoryFor returns the MaxMemoryBytes a Runtime needs to run scripts
// with the given heap limit.
func MaxMemoryFor(heapBytes uint64) uint64 {
	return max(heapBytes+MemoryOverheadBytes, DefaultMaxMemoryBytes)
}

const wasmPageSize = 64 << 10

// Runtime owns the compiled Luau module and creates instances of it.
type Runtime struct {
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
	config   wazero.ModuleConfig
	cache    wazero.CompilationCache
	// maxMemory caps each instance's linear memory, in bytes.
	maxMemory uint64
	// tracer is Config.Tracer.
	tracer *telemetry.Tracer
	// liftedData says that the compiled module's active data segments were
	// taken out of it (wasmrewrite.WithoutActiveData): instantiating it
	// writes nothing into memory, the first instance gets dataSegments
	// written by the host and the later ones start from the image's memory
	// template.
	liftedData   bool
	dataSegments []wasmrewrite.DataSegment
	// lazyTable says that the compiled module fills its function table on
	// demand (wasmrewrite.LazyTable).
	lazyTable bool
	// sdk is the current sdk manifest and the image instances start from
	// (Config.SDK, then SetSDK).
	sdk atomic.Pointer[sdkVariant]

	// pool holds ready, never-used instances (nil without a pool).
	pool chan *instance
	// background counts goroutines that fill the pool or close used
	// instances; closing stops new ones from starting.
	background sync.WaitGroup
	mu         sync.Mutex
	closing    bool
}

// New compiles the Luau module and, if cfg.PoolSize > 0, starts filling the
// pool of ready instances.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.MaxMemoryBytes == 0 {
		cfg.MaxMemoryBytes = DefaultMaxMemoryBytes
	}
	pages := (cfg.MaxMemoryBytes + wasmPageSize - 1) / wasmPageSize
	if pages > 65536 {
		return nil, fmt.Errorf("luau: memory limit %d bytes exceeds the 4 GiB a wasm32 module can address", cfg.MaxMemoryBytes)
	}

	rtConfig := wazero.NewRuntimeConfig().
		WithMemoryLimitPages(uint32(pages)).
		WithCloseOnContextDone(cfg.StopOnContextDone) // runs stop through Luau's interrupt instead: 5x cheaper
	r := &Runtime{maxMemory: pages * wasmPageSize, tracer: cfg.Tracer}
	v, err := newSDKVariant(cfg.SDK)
	if err != nil {
		return nil, err
	}
	r.sdk.Store(v)
	module, err := r.loadModule(cfg)
	if err != nil {
		return nil, err
	}
	compiled, err := r.compileCached(ctx, rtConfig, module, cfg)
	if err != nil {
		return nil, err
	}
	r.compiled = compiled
	if _, ok := compiled.ExportedFunctions()["ts_abi_version"]; !ok {
		r.Close(ctx)
		return nil, fmt.Errorf("luau: luau.wasm has no ABI version (it does not export ts_abi_version), this host speaks %d: rebuild the wasm", abiVersion)
	}

	// No preopens, no environment, no arguments: the guest reaches nothing
	// outside its memory but through the toolscript host functions. Each
	// instance gets its own clocks in instantiate: the wall clock (os.time,
	// os.date) and a monotonic one (os.clock), both read through the
	// execution's effects (recorded, or replayed). No start function: the
	// first instance initialises explicitly, the others from the image.
	r.config = wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithRandSource(rand.Reader)

	if cfg.PoolSize > 0 {
		r.startPool(cfg.PoolSize)
	}
	return r, nil
}

// tableExports are the exports of a module whose function table is filled
// on demand.
var tableExports = wasmrewrite.TableExports{Fill: wasm.TableFillExport, Used: wasm.TableUsedExport}

// loadModule returns the bytes of the module to compile, and notes in r
// what they are. wasm.Binary fills its function table on demand already
// (luau-build/build.sh rewrote it); another module (Config.Module) is
// rewritten here when it can be, and used as it is otherwise. Where
// instances start from a memory template, the contents of the active data
// segments are lifted out, for the host to write into the first instance.
func (r *Runtime) loadModule(cfg Config) ([]byte, error) {
	module := cfg.Module
	if module == nil {
		module = wasm.Binary
	}
	module, r.lazyTable = wasmrewrite.EnsureLazyTable(module, tableExports)
	if cfg.eagerTable && r.lazyTable {
		eager, err := wasmrewrite.EagerTable(module)
		if err != nil {
			return nil, fmt.Errorf("luau: filling the function table at instantiation: %w", err)
		}
		module, r.lazyTable = eager, false
	}
	if memimage.Supported {
		if stripped, segments, err := wasmrewrite.WithoutActiveData(module); err == nil {
			module, r.dataSegments, r.liftedData = stripped, segments, true
		}
	}
	return module, nil
}

// compileCached makes the wazero runtime and compiles module, with the
// compilation cache when it can be used: one that cannot be opened, read
// or written (a truncated entry, a full disk, a directory another user
// could write) is bypassed with one warning, and its entries that failed
// are removed so that the next start writes them anew.
func (r *Runtime) compileCached(ctx context.Context, rtConfig wazero.RuntimeConfig, module []byte, cfg Config) (wazero.CompiledModule, error) {
	dir, cache, err := openCache(cfg.CacheDir)
	if err != nil && !errors.Is(err, cachedir.ErrNoUserCacheDir) {
		cfg.CacheWarning.Warn("the compiled-module cache", err)
	}
	if cache == nil {
		return r.compile(ctx, rtConfig, module, nil)
	}
	compiled, cachedErr := r.compile(ctx, rtConfig, module, cache)
	if cachedErr == nil {
		return compiled, nil
	}
	r.closeRuntime(ctx)
	compiled, err = r.compile(ctx, rtConfig, module, nil)
	if err != nil {
		return nil, err // the module's own error, not the cache's
	}
	cfg.CacheWarning.Warn("the compiled-module cache "+dir, cachedErr)
	clearCache(dir)
	return compiled, nil
}

// compile makes the runtime (with cache, when not nil) and its host
// modules, and compiles module. On an error nothing is left open.
func (r *Runtime) compile(ctx context.Context, rtConfig wazero.RuntimeConfig, module []byte, cache wazero.CompilationCache) (wazero.CompiledModule, error) {
	r.cache = cache
	if cache != nil {
		rtConfig = rtConfig.WithCompilationCache(cache)
	}
	r.runtime = wazero.NewRuntimeWithConfig(ctx, rtConfig)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r.runtime); err != nil {
		r.closeRuntime(ctx)
		return nil, fmt.Errorf("luau: instantiating WASI: %w", err)
	}
	if err := instantiateHostModule(ctx, r.runtime); err != nil {
		r.closeRuntime(ctx)
		return nil, fmt.Errorf("luau: instantiating host functions: %w", err)
	}
	compiled, err := r.runtime.CompileModule(ctx, module)
	if err != nil {
		r.closeRuntime(ctx)
		return nil, fmt.Errorf("luau: compiling the Luau module: %w", err)
	}
	return compiled, nil
}

// closeRuntime closes the runtime and the cache of a Runtime that has no
// instance yet.
func (r *Runtime) closeRuntime(ctx context.Context) {
	r.runtime.Close(ctx)
	if r.cache != nil {
		r.cache.Close(ctx)
		r.cache = nil
	}
}

// openCache opens wazero's compilation cache in dir ("" the user cache
// directory's toolscript/wazero, "off" none) once it and what is in it
// pass cachedir's checks: wazero's entries are machine code it runs,
// checked only against a CRC, so the directory's owner is the defence.
// Entries that fail the checks are removed (the directories are the
// user's); a directory that fails them is not used.
func openCache(dir string) (string, wazero.CompilationCache, error) {
	var err error
	switch dir {
	case "off":
		return "", nil, nil
	case "":
		dir, err = cachedir.Open("wazero")
	default:
		if err = os.MkdirAll(dir, cachedir.DirMode); err == nil {
			err = cachedir.CheckDir(dir)
		}
	}
	if err != nil {
		return dir, nil, err
	}
	if err := checkCacheEntries(dir); err != nil {
		return dir, nil, err
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return dir, nil, err
	}
	return dir, cache, nil
}

// OpenCache opens wazero's compilation cache as a Runtime does (dir as
// Config.CacheDir), for the other modules that share its directory
// (host/runtime/typecheck). The string is the directory, for warnings.
func OpenCache(dir string) (string, wazero.CompilationCache, error) {
	return openCache(dir)
}

// checkCacheEntries checks the version directories wazero keeps in dir
// and removes the entries in them that fail cachedir.CheckEntry. The
// error names a directory that fails cachedir.CheckDir.
func checkCacheEntries(dir string) error {
	var bad error
	for _, sub := range subdirs(dir) {
		if err := cachedir.CheckDir(sub); err != nil {
			return err
		}
		entries, _ := os.ReadDir(sub)
		for _, e := range entries {
			path := filepath.Join(sub, e.Name())
			if err := cachedir.CheckEntry(path); err != nil {
				bad = errors.Join(bad, err)
				os.Remove(path)
			}
		}
	}
	return bad
}

// subdirs are the paths of what dir holds, each presumed a directory
// (CheckDir says otherwise).
func subdirs(dir string) []string {
	entries, _ := os.ReadDir(dir)
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, filepath.Join(dir, e.Name()))
	}
	return out
}

// clearCache removes the entries of wazero's cache in dir after one failed
// to be read or written: which one wazero does not say.
func clearCache(dir string) {
	for _, sub := range subdirs(dir) {
		if cachedir.CheckDir(sub) != nil {
			continue
		}
		entries, _ := os.ReadDir(sub)
		for _, e := range entries {
			os.Remove(filepath.Join(sub, e.Name()))
		}
	}
}

// StartPool starts filling a pool of size ready instances in the
// background, for a Runtime made without one (Config.PoolSize 0): a caller
// that sets the sdk table after New (SetSDK) starts the pool then, so that
// it is filled once, with the right table. It does nothing when there is
// a pool already or size is not positive.
func (r *Runtime) StartPool(size int) {
	r.mu.Lock()
	started := r.pool != nil || size <= 0
	r.mu.Unlock()
	if !started {
		r.startPool(size)
	}
}

// startPool fills the pool in the background.
func (r *Runtime) startPool(size int) {
	r.pool = make(chan *instance, size)
	r.inBackground(func() {
		for range size {
			if !r.refill() {
				return
			}
		}
	})
}

// inBackground runs fn in a goroutine unless the runtime is closing.
func (r *Runtime) inBackground(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return
	}
	r.background.Add(1)
	go func() {
		defer r.background.Done()
		fn()
	}()
}

// refill adds one fresh instance to the pool unless it is full. It reports
// whether it added one.
func (r *Runtime) refill() bool {
	if len(r.pool) == cap(r.pool) {
		return false
	}
	inst, err := r.newInstance(context.Background())
	if err != nil {
		return false // Execute creates instances itself and reports the error
	}
	select {
	case r.pool <- inst:
		return true
	default:
		inst.close()
		return false
	}
}

// discard closes a used instance and replaces it in the pool, in the
// background and after the execution: unmapping a memory costs more than
// running a small script, and creating an instance while a script runs
// would slow that script down (both contend for the process's memory map).
func (r *Runtime) discard(inst *instance) {
	r.inBackground(func() {
		inst.close()
		if r.pool != nil {
			r.refill()
		}
	})
}

// Close stops the pool and releases the runtime and every instance.
// Executions must have returned before Close is called.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	r.background.Wait()
	if r.pool != nil {
		for len(r.pool) > 0 {
			(<-r.pool).close()
		}
	}
	if img := r.sdk.Load().image; img != nil {
		img.template.Close()
	}
	err := r.runtime.Close(ctx)
	if r.cache != nil {
		err = errors.Join(err, r.cache.Close(ctx))
	}
	return err
}

// sdkVariant is one sdk manifest and the image of an instance initialised
// with it: every instance starts from the variant current when it is made.
type sdkVariant struct {
	// manifest is the manifest as the shim reads it (JSON), or nil.
	manifest []byte
	// image is what instances start from, taken from the first one.
	mu    sync.Mutex
	image *image
}

func newSDKVariant(m *sdkcall.Manifest) (*sdkVariant, error) {
	if m == nil {
		return &sdkVariant{}, nil
	}
	manifest, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("luau: encoding the sdk manifest: %w", err)
	}
	return &sdkVariant{manifest: manifest}, nil
}

// SetSDK replaces the sdk table of the executions that start from now on
// (an upstream's tools changed); executions already running keep theirs.
// The sdkcall.Caller of a script made before the change may thus see calls of
// the new manifest's functions, and the other way round: function IDs
// must keep their meaning across manifests (package sdk keeps them).
func (r *Runtime) SetSDK(m *sdkcall.Manifest) error {
	v, err := newSDKVariant(m)
	if err != nil {
		return err
	}
	r.sdk.Store(v)
	if r.pool != nil {
		// Replace the pool's instances of the old manifest now, not when an
		// execution finds them.
		r.inBackground(func() {
			for range cap(r.pool) {
				select {
				case inst := <-r.pool:
					if inst.sdk == r.sdk.Load() {
						select {
						case r.pool <- inst:
						default:
							inst.close()
						}
						continue
					}
					inst.close()
					r.refill()
				default:
					return
				}
			}
		})
	}
	return nil
}

// acquire returns a fresh instance of the current sdk manifest: from the
// pool when one is ready.
func (r *Runtime) acquire(ctx context.Context) (*instance, error) {
	for r.pool != nil {
		select {
		case inst := <-r.pool:
			if inst.sdk == r.sdk.Load() {
				return inst, nil
			}
			r.discard(inst)
			continue
		default:
		}
		break
	}
	return r.newInstance(ctx)
}

// newInstance creates an instance with a fresh Luau state and the current
// sdk manifest: from the variant's image, or by initialising the module
// when there is no image yet, and then taking it.
func (r *Runtime) newInstance(ctx context.Context) (*instance, error) {
	v := r.sdk.Load()
	v.mu.Lock()
	img := v.image
	if img != nil {
		v.mu.Unlock()
		inst, mod, err := r.instantiate(ctx, img.clock, img.template)
		if err != nil {
			return nil, err
		}
		if err := img.restore(inst, mod); err != nil {
			mod.Close(ctx)
			return nil, err
		}
		if err := inst.fillTable(ctx, img.tableHot); err != nil {
			mod.Close(ctx)
			return nil, err
		}
		inst.sdk = v
		return inst, nil
	}
	defer v.mu.Unlock()
	inst, mod, err := r.instantiate(ctx, 0, nil)
	if err != nil {
		return nil, err
	}
	return r.makeImage(ctx, v, inst, mod)
}

// makeImage initialises inst, the first instance of v, and takes v's image.
func (r *Runtime) makeImage(ctx context.Context, v *sdkVariant, inst *instance, mod api.Module) (*instance, error) {
	fresh, _ := mod.Memory().Read(0, mod.Memory().Size())
	fresh = bytes.Clone(fresh)
	for _, seg := range r.dataSegments {
		if !mod.Memory().Write(seg.Offset, seg.Data) {
			mod.Close(ctx)
			return nil, fmt.Errorf("luau: a data segment of %d bytes at %d is out of the memory's bounds", len(seg.Data), seg.Offset)
		}
	}
	if err := inst.initialize(withInstance(ctx, inst), mod, v.manifest); err != nil {
		mod.Close(ctx)
		return nil, err
	}
	img, err := newImage(inst, fresh, inst.clock.last)
	if err != nil {
		mod.Close(ctx)
		return nil, err
	}
	if r.liftedData {
		// Without a template, instances copy the image's pages as
		// elsewhere: the image is the difference from a memory without
		// the data segments, so it holds them too.
		if mem, ok := mod.Memory().Read(0, img.size); ok {
			img.template, _ = memimage.NewTemplate(mem)
		}
	}
	if img.template != nil || r.lazyTable {
		r.learnHot(ctx, v, img)
	}
	v.image = img
	inst.sdk = v
	return inst, nil
}

// warmUpScript is what learnHot runs: the smallest script.
const warmUpScript = "return 1"

// learnHot runs warmUpScript, a script of the host's, on an instance
// restored from img, and notes what every execution needs that later
// instances can prepare before they wait in the pool:
//   - the pages of the template it wrote (the Luau state it starts from,
//     the top of the C stack), which instances copy when they map the
//     template (memimage.Template.Hot);
//   - the entries of the function table it filled (the compiler's, the
//     VM's), when the module fills its table on demand (image.tableHot).
//
// The instance is then closed; nothing of it but the page and entry
// numbers is kept, and the scripts of users play no part.
func (r *Runtime) learnHot(ctx context.Context, v *sdkVariant, img *image) {
	inst, mod, err := r.instantiate(ctx, img.clock, img.template)
	if err != nil {
		return
	}
	defer inst.close()
	if img.restore(inst, mod) != nil {
		return
	}
	inst.sdk = v
	limits := Limits{}.WithDefaults()
	exec := &execution{logs: logSink{maxLines: limits.MaxLogLines, maxBytes: limits.MaxLogBytes}, maxParallel: 1}
	if e := r.run(ctx, inst, Script{Source: []byte(warmUpScript)}, limits, exec, &result.Result{}); e != nil {
		return
	}
	if r.lazyTable {
		img.tableHot = inst.tableUsed(ctx)
	}
	if mem, ok := inst.mem.Read(0, inst.mem.Size()); ok && inst.fromTemplate {
		img.template.Hot = img.template.WrittenPages(mem)
	}
}

// instantiate instantiates the module, without initialising it, for a new
// instance whose monotonic clock starts at clockStart and whose memory
// starts as tmpl when it is not nil.
func (r *Runtime) instantiate(ctx context.Context, clockStart int64, tmpl *memimage.Template) (*instance, api.Module, error) {
	inst := &instance{clock: newInstanceClock(clockStart)}
	config := r.config.WithNanotime(inst.nanotime, 1).WithWalltime(inst.walltime, sys.ClockResolution(time.Microsecond))
	mod, err := r.runtime.InstantiateModule(withInstance(memimage.WithAllocator(ctx, tmpl, func() { inst.fromTemplate = true }), inst), r.compiled, config)
	if err != nil {
		return nil, nil, fmt.Errorf("luau: instantiating the Luau module: %w", err)
	}
	return inst, mod, nil
}

func exported(mod api.Module, name string) (api.Function, error) {
	fn := mod.ExportedFunction(name)
	if fn == nil {
		return nil, fmt.Errorf("luau: the module does not export %s", name)
	}
	return fn, nil
}
