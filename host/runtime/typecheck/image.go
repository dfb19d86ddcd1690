package typecheck

import (
	"bytes"
	"context"
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
	"github.com/toolscript/toolscript/host/runtime/memimage"
	"github.com/toolscript/toolscript/internal/wasmrewrite"
)

// modules are the checker module compiled twice, in two runtimes that
// differ only in wazero's stop checks (WithCloseOnContextDone), which make
// the code about three times slower. The loader has none: it runs only
// the load of the definitions, which come from the operator's
// configuration, are capped in size and so finish on their own. The
// checker has them: it runs the scripts, which are untrusted, and a check
// is stopped wherever it is when its time is up. Same wasm, same memory
// layout: an image of a loader instance restores into a checker instance.
type modules struct {
	cache           wazero.CompilationCache
	loader, checker wazero.Runtime
	loaderCompiled  wazero.CompiledModule
	checkerCompiled wazero.CompiledModule
	// dataSegments are the module's active data segments, lifted out of
	// the compiled modules (wasmrewrite.WithoutActiveData) so that
	// instantiating one writes nothing over a mapped template: the host
	// writes them into the loader instance.
	dataSegments []wasmrewrite.DataSegment
}

// ensureModules compiles the modules if they are not yet, with the
// compilation cache when it can be used.
func (c *Checker) ensureModules(ctx context.Context) (*modules, error) {
	c.compileMu.Lock()
	defer c.compileMu.Unlock()
	if c.modules != nil {
		return c.modules, nil
	}
	module, segments := c.cfg.Module, []wasmrewrite.DataSegment(nil)
	if memimage.Supported {
		if stripped, segs, err := wasmrewrite.WithoutActiveData(module); err == nil {
			module, segments = stripped, segs
		}
	}
	dir, cache, err := luau.OpenCache(c.cfg.CacheDir)
	if err != nil && !errors.Is(err, cachedir.ErrNoUserCacheDir) {
		c.cfg.CacheWarning.Warn("the compiled-module cache", err)
	}
	m, err := c.compile(ctx, module, cache)
	if err != nil && cache != nil {
		c.cfg.CacheWarning.Warn("the compiled-module cache "+dir, err)
		m, err = c.compile(ctx, module, nil)
	}
	if err != nil {
		return nil, err
	}
	m.dataSegments = segments
	c.modules = m
	return m, nil
}

// compile compiles module in the two runtimes, side by side, with cache
// when not nil; on an error nothing is left open.
func (c *Checker) compile(ctx context.Context, module []byte, cache wazero.CompilationCache) (*modules, error) {
	m := &modules{cache: cache}
	var loaderErr, checkerErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.checker, m.checkerCompiled, checkerErr = c.compileIn(ctx, module, cache, true)
	}()
	m.loader, m.loaderCompiled, loaderErr = c.compileIn(ctx, module, cache, false)
	wg.Wait()
	if err := errors.Join(loaderErr, checkerErr); err != nil {
		m.close(ctx)
		return nil, err
	}
	return m, nil
}

// compileIn makes a runtime, stopped on its context's end or not, and
// compiles module in it.
func (c *Checker) compileIn(ctx context.Context, module []byte, cache wazero.CompilationCache, stoppable bool) (wazero.Runtime, wazero.CompiledModule, error) {
	pages := uint32((c.cfg.MaxMemoryBytes + 65535) / 65536)
	rtConfig := wazero.NewRuntimeConfig().
		WithMemoryLimitPages(pages).
		WithCloseOnContextDone(stoppable)
	if cache != nil {
		rtConfig = rtConfig.WithCompilationCache(cache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, rtConfig)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		r.Close(ctx)
		return nil, nil, fmt.Errorf("typecheck: instantiating WASI: %w", err)
	}
	compiled, err := r.CompileModule(ctx, module)
	if err != nil {
		r.Close(ctx)
		return nil, nil, fmt.Errorf("typecheck: compiling the checker module: %w", err)
	}
	return r, compiled, nil
}

func (m *modules) close(ctx context.Context) error {
	var err error
	for _, r := range []wazero.Runtime{m.loader, m.checker} {
		if r != nil {
			err = errors.Join(err, r.Close(ctx))
		}
	}
	if m.cache != nil {
		err = errors.Join(err, m.cache.Close(ctx))
	}
	return err
}

// instanceConfig instantiates a module with nothing from the host (no
// preopens, environment or arguments) and no start function: the loader
// instance initialises explicitly, checker instances from the image.
var instanceConfig = wazero.NewModuleConfig().WithName("").WithStartFunctions()

// imageJob makes the image of one set of definitions, once; checks wait
// for it.
type imageJob struct {
	done chan struct{}
	// superseded is closed when the job's definitions are no longer the
	// Checker's (Load, Close): a load that has not started does not.
	superseded chan struct{}
	// img, loose and err are set before done is closed: loose are the
	// parts of the definitions img declares loosely.
	img   *image
	loose []PartError
	err   error
	// refs counts the job's users (Checker.mu): the Checker while the job
	// is current, the load while it runs, each check that waits or runs.
	refs int
}

// image is the memory of a loader instance whose definitions are loaded:
// a template where there can be one, its runs elsewhere. Only the memory:
// the module's one mutable global, __stack_pointer, is back at its
// initial value whenever no call runs, and the shim's buffers are found
// anew by each call (tc_alloc, tc_result_addr).
type image struct {
	size     uint32
	template *memimage.Template
	runs     []memimage.Run

	mu sync.Mutex
	// ready is a fresh instance made from the image ahead of the next
	// check, which has run nothing; nil when there is none.
	ready  api.Module
	closed bool
}

// close closes the instance made ahead and the template; the instances
// mapped from the template keep their mappings.
func (img *image) close() {
	img.mu.Lock()
	img.closed = true
	ready := img.ready
	img.ready = nil
	img.mu.Unlock()
	if ready != nil {
		ready.Close(context.Background())
	}
	img.template.Close()
}

// take returns the instance made ahead, or nil.
func (img *image) take() api.Module {
	img.mu.Lock()
	defer img.mu.Unlock()
	mod := img.ready
	img.ready = nil
	return mod
}

// put keeps mod as the instance made ahead; false when there is one
// already or the image is closed.
func (img *image) put(mod api.Module) bool {
	img.mu.Lock()
	defer img.mu.Unlock()
	if img.closed || img.ready != nil {
		return false
	}
	img.ready = mod
	return true
}

// errSuperseded is the error of a job whose definitions were replaced
// before their load started.
var errSuperseded = &UncheckedError{Reason: "the definitions changed before they loaded"}

// makeImage compiles the modules if need be, loads definitions into a
// loader instance, whose memory becomes job's image, learns the image's
// hot pages and makes the first checker instance ahead. Loads run one at
// a time (a load cannot be stopped midway, and takes the memory of an
// instance): definitions replaced while they wait for their turn are
// never loaded, so definitions that change often (an upstream server's
// tools) cost one load running and the newest waiting, however many
// changes and checks there are.
func (c *Checker) makeImage(job *imageJob, definitions Parts) {
	defer c.release(job)
	ctx := context.Background()
	m, err := c.ensureModules(ctx)
	if err == nil {
		select {
		case c.loading <- struct{}{}:
			defer func() { <-c.loading }()
			select {
			case <-job.superseded:
				err = errSuperseded
			default:
			}
		case <-job.superseded:
			err = errSuperseded
		}
	}
	if err == nil {
		job.img, job.loose, err = c.loadParts(ctx, m, job, definitions)
	}
	job.err = err
	if err == nil {
		m.learnHot(ctx, job.img)
	}
	close(job.done)
	if len(job.loose) > 0 && c.cfg.OnLoose != nil {
		c.cfg.OnLoose(job.loose)
	}
	if err == nil {
		m.prepare(job.img)
	}
}

// warmUpScript is what learnHot checks: a script of the host's with the
// usual constructs of a script (locals, tables, functions, loops, string
// and table library calls, pcall), so that the pages it writes are those
// most checks write.
const warmUpScript = `local items: { { name: string, n: number } } = {}
for i = 1, 10 do
	table.insert(items, { name = string.format("item %d", i), n = i * 2 })
end
local function total(list: { { name: string, n: number } }): number
	local sum = 0
	for _, item in ipairs(list) do
		if item.n > 3 and #item.name > 0 then
			sum += item.n
		end
	end
	return sum
end
local ok, err = pcall(function()
	return total(items)
end)
if not ok then
	print(tostring(err))
end
local names = {}
for _, item in items do
	names[#names + 1] = string.upper(item.name)
end
return { total = total(items), names = table.concat(names, ",") }
`

// learnHot checks warmUpScript in an instance made from img and notes the
// pages of the template it wrote (the top of the C stack, the allocator's
// state, the checker's working memory), which instances made ahead copy
// before a check needs them (memimage.Template.Hot). It runs before the
// template is used by anything else; the instance is then closed.
func (m *modules) learnHot(ctx context.Context, img *image) {
	if img.template == nil {
		return
	}
	mod, err := m.newInstance(ctx, img)
	if err != nil {
		return
	}
	defer mod.Close(ctx)
	if _, err := call(ctx, mod, "tc_check", []byte(warmUpScript)); err != nil {
		return
	}
	if mem, ok := mod.Memory().Read(0, mod.Memory().Size()); ok {
		img.template.Hot = img.template.WrittenPages(mem)
	}
}

// prepare makes an instance from img ahead of the next check, unless
// there is one.
func (m *modules) prepare(img *image) {
	img.mu.Lock()
	needed := !img.closed && img.ready == nil
	img.mu.Unlock()
	if !needed {
		return
	}
	mod, err := m.newInstance(context.Background(), img)
	if err != nil {
		return
	}
	if !img.put(mod) {
		mod.Close(context.Background())
	}
}

// newInstance makes a fresh checker instance from img.
func (m *modules) newInstance(ctx context.Context, img *image) (api.Module, error) {
	mapped := false
	mod, err := m.checker.InstantiateModule(memimage.WithAllocator(ctx, img.template, func() { mapped = true }), m.checkerCompiled, instanceConfig)
	if err != nil {
		return nil, err
	}
	if err := img.restore(mod, mapped); err != nil {
		mod.Close(ctx)
		return nil, err
	}
	return mod, nil
}

// load instantiates the loader module, initialises it (its data
// segments, _initialize), loads definitions and takes the image (none
// when keep is false: the load only tells whether they load). An error
// of the definitions' load itself is a *loadError.
func (m *modules) load(ctx context.Context, definitions []byte, keep bool) (*image, error) {
	mod, err := m.loader.InstantiateModule(memimage.WithAllocator(ctx, nil, nil), m.loaderCompiled, instanceConfig)
	if err != nil {
		return nil, &UncheckedError{Reason: "starting the checker failed", Err: err}
	}
	defer mod.Close(ctx)
	mem := mod.Memory()
	fresh, _ := mem.Read(0, mem.Size())
	fresh = bytes.Clone(fresh)
	for _, seg := range m.dataSegments {
		if !mem.Write(seg.Offset, seg.Data) {
			return nil, fmt.Errorf("typecheck: a data segment of %d bytes at %d is out of the memory's bounds", len(seg.Data), seg.Offset)
		}
	}
	if _, err := mod.ExportedFunction("_initialize").Call(ctx); err != nil {
		return nil, uncheckedCall(ctx, ctx, mod, "starting the checker", 0, err)
	}
	out, err := call(ctx, mod, "tc_load_definitions", definitions)
	if err != nil {
		return nil, &loadError{uncheckedCall(ctx, ctx, mod, "loading the definitions", 0, err)}
	}
	if out.status == 0 {
		diags, _ := decodeDiagnostics(out)
		return nil, &loadError{fmt.Errorf("%w do not load: %s", ErrDefinitions, firstMessage(diags))}
	}
	if !keep {
		return nil, nil
	}
	loaded, ok := mem.Read(0, mem.Size())
	if !ok {
		return nil, fmt.Errorf("typecheck: reading %d bytes of the loaded checker's memory", mem.Size())
	}
	img := &image{size: uint32(len(loaded))}
	if img.template, err = memimage.NewTemplate(loaded); err != nil {
		img.template, img.runs = nil, memimage.Diff(loaded, fresh)
	}
	return img, nil
}

// checkIn checks source in a fresh checker instance made from job's
// image: the one made ahead, or a new one. Afterwards, off the caller's
// path, the instance is closed whatever happened and the next one made.
func (c *Checker) checkIn(ctx context.Context, job *imageJob, source string) ([]Diagnostic, error) {
	m := c.modules // set before any image exists; kept until Close, which waits for checks
	img := job.img
	mod := img.take()
	if mod == nil {
		var err error
		if mod, err = m.newInstance(ctx, img); err != nil {
			return nil, &UncheckedError{Reason: "starting the checker failed", Err: err}
		}
	}
	c.retain(job)
	defer func() {
		go func() {
			defer c.release(job)
			mod.Close(context.Background())
			m.prepare(img)
		}()
	}()
	if c.beforeCheck != nil {
		c.beforeCheck(mod)
	}
	checkCtx, cancel := context.WithTimeout(ctx, c.cfg.CheckTimeout)
	defer cancel()
	out, err := call(checkCtx, mod, "tc_check", []byte(source))
	if err != nil {
		return nil, uncheckedCall(ctx, checkCtx, mod, "checking the script", c.cfg.CheckTimeout, err)
	}
	return decodeDiagnostics(out)
}

// restore gives mod, a fresh checker instance, the image's memory: mapped
// says its memory starts as the image's template already.
func (img *image) restore(mod api.Module, mapped bool) error {
	if img.template != nil && !mapped {
		return errors.New("typecheck: the image's template could not be mapped")
	}
	mem := mod.Memory()
	if cur := mem.Size(); cur < img.size {
		if _, ok := mem.Grow((img.size - cur) / 65536); !ok {
			return fmt.Errorf("typecheck: growing a checker instance's memory to %d bytes", img.size)
		}
	}
	if !mapped {
		buf, ok := mem.Read(0, img.size)
		if !ok {
			return fmt.Errorf("typecheck: reading %d bytes of a checker instance's memory", img.size)
		}
		memimage.Apply(buf, img.runs)
	}
	return nil
}

// callResult is what tc_check and tc_load_definitions answer: their
// status and the result buffer's bytes.
type callResult struct {
	status int32
	text   []byte
}

// call copies input into mod, calls the export fn with it and reads the
// result buffer.
func call(ctx context.Context, mod api.Module, fn string, input []byte) (callResult, error) {
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

// uncheckedCall words a call into mod that did not finish (mod is then
// dropped: it is closed or in an unknown state). limit is the call's time
// limit, 0 for none.
func uncheckedCall(ctx, callCtx context.Context, mod api.Module, what string, limit time.Duration, err error) error {
	thrown := thrown(ctx, mod)
	var exit *sys.ExitError
	switch {
	case limit > 0 && errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeDeadlineExceeded && ctx.Err() == nil:
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
func thrown(ctx context.Context, mod api.Module) string {
	if mod.IsClosed() {
		return ""
	}
	fn := mod.ExportedFunction("tc_thrown")
	if fn == nil {
		return ""
	}
	res, err := fn.Call(ctx)
	if err != nil {
		return ""
	}
	name, ok := mod.Memory().Read(uint32(res[0]), 128)
	if !ok {
		return ""
	}
	if end := bytes.IndexByte(name, 0); end >= 0 {
		name = name[:end]
	}
	return strings.ToValidUTF8(string(name), "?")
}
