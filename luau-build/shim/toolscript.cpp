// toolscript.cpp: the API the toolscript host drives the Luau module through.
//
// One module instance holds one Luau state. The host calls ts_init once, then
// ts_run once with the script's source; ts_run compiles it with the real Luau
// front end, runs it in the sandboxed environment and leaves the outcome (the
// result as JSON, or the error message, its kind and line) in ts_out, which
// the host reads with a single memory read. Nothing crosses the boundary per
// value: results and errors are converted here, in bulk.
#include "shim.h"
#include "toolscript_host.h"

#include "Luau/BytecodeBuilder.h"
#include "Luau/Compiler.h"
#include "Luau/Parser.h"

#include "lua.h"
#include "luacode.h"
#include "lualib.h"

#include "ldo.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <typeinfo>

// Safepoints left before the VM calls the interrupt callback again (see
// luau-build/patches/lvmexecute-interrupt-budget.patch).
extern "C" unsigned ts_interrupt_budget = 256;

namespace
{

// The outcome of ts_run, read by the host at the address ts_out_addr returns.
// Layout (all little-endian 32-bit): ptr, len, line, kind.
struct Out
{
    uint32_t ptr;  // result JSON or error message
    uint32_t len;
    int32_t line;  // 1-based line of the error, 0 when unknown
    int32_t kind;  // TsKind
};
static_assert(sizeof(Out) == TS_OUT_SIZE, "abi.h: TS_OUT_SIZE");

struct State
{
    lua_State* L = nullptr;
    // running is set while the script's own code runs (after it compiled).
    bool running = false;
    // workLeft counts down the units of work C code may do before the next
    // host tick (ts_work).
    size_t workLeft = 0;
    // The sdk's manifest (ts_set_sdk), read by ts_init.
    const char* sdkManifest = nullptr;
    size_t sdkManifestLen = 0;
    size_t heapUsed = 0;
    size_t heapLimit = 0;
    bool heapLimitHit = false;
    uint32_t ticks = 0;
    int errorLine = 0;
    TsKind tagKind = TS_RUNTIME;
    std::string scratch; // owns messages built outside the Lua heap
};

State state;
Out out;

const char* const kTagKey = "toolscript.errortag";
const size_t kWarmHeapBytes = 256 * 1024;
const char* const kChunkName = "=script";
// An error object that is not a string is reported as JSON, at most this long.
const size_t kMaxErrorObjectBytes = 64 * 1024;

void* limitedAlloc(void* ud, void* ptr, size_t osize, size_t nsize)
{
    (void)ud;
    if (nsize == 0)
    {
        free(ptr);
        state.heapUsed -= osize;
        return nullptr;
    }
    if (nsize > osize && state.heapUsed - osize + nsize > state.heapLimit)
    {
        state.heapLimitHit = true;
        return nullptr;
    }
    void* block = realloc(ptr, nsize);
    if (block == nullptr)
    {
        state.heapLimitHit = true;
        return nullptr;
    }
    state.heapUsed = state.heapUsed - osize + nsize;
    return block;
}

// The VM calls interrupt once every kInterruptBudget safepoints (see
// luau-build/patches/lvmexecute-interrupt-budget.patch); the string
// library's matcher and the collector call it directly.
const unsigned kInterruptBudget = 256;

// The collector's goal: how far the heap may grow past what a cycle left
// before the next cycle ends, in percent. Luau's default of 200 makes a
// small heap collect very often, marking the same builtins and sdk table
// each time: a loop of sdk calls on a heap of a few hundred kilobytes
// spends about a tenth of its guest time in the collector. So the goal is
// up to kMaxGCGoal while the heap it lets grow stays within half the
// memory limit, and never below the default: a large heap collects as it
// always did, and garbage never brings a script to its memory limit
// sooner than with the default (Luau has no emergency collection).
const size_t kMinGCGoal = 200;
const size_t kMaxGCGoal = 1000;

int gcGoal(size_t heap, size_t limit)
{
    size_t goal = (limit / 2) / (heap / 100 + 1);
    return int(goal < kMinGCGoal ? kMinGCGoal : goal > kMaxGCGoal ? kMaxGCGoal : goal);
}

void interrupt(lua_State* L, int gc)
{
    // After each step of the collector (gc is its state): the goal the end
    // of its cycle will use, from the heap as it is now (garbage included,
    // so never more than it should be).
    if (gc >= 0)
        lua_gc(L, LUA_GCSETGOAL, gcGoal(state.heapUsed, state.heapLimit));
    ts_interrupt_budget = kInterruptBudget;
    // A goroutine running compiled wasm cannot be preempted by Go; a host
    // call now and then gives the Go scheduler and garbage collector a safe
    // point (without it a looping script can stall the whole process), and
    // lets the host stop the script.
    if ((++state.ticks & 15) == 0)
        ts_host_tick();
}

// Units of work between two host ticks from C code (ts_work): about a
// millisecond of converting or scanning.
const size_t kWorkQuantum = size_t(1) << 18;

int luaPrint(lua_State* L)
{
    int n = lua_gettop(L);
    luaL_Strbuf b;
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; i++)
    {
        size_t len;
        const char* s = luaL_tolstring(L, i, &len);
        if (i > 1)
            luaL_addchar(&b, '\t');
        luaL_addlstring(&b, s, len);
        lua_pop(L, 1);
    }
    luaL_pushresult(&b);
    size_t len;
    const char* line = lua_tolstring(L, -1, &len);
    ts_host_print(line, len);
    return 0;
}

int luaProgress(lua_State* L)
{
    double done = luaL_checknumber(L, 1);
    double total = luaL_optnumber(L, 2, -1);
    size_t len = 0;
    const char* message = luaL_optlstring(L, 3, "", &len);
    ts_host_progress(done, total, message, len);
    return 0;
}

// Removes the named fields from the table on top of the stack.
void removeFields(lua_State* L, const char* const* names)
{
    for (; *names; names++)
    {
        lua_pushnil(L);
        lua_setfield(L, -2, *names);
    }
}

int openEnvironment(lua_State* L)
{
    const lua_CFunction libs[] = {
        luaopen_base,
        luaopen_coroutine,
        luaopen_table,
        luaopen_os,
        luaopen_string,
        luaopen_math,
        luaopen_utf8,
        luaopen_bit32,
        luaopen_buffer,
    };
    for (lua_CFunction open : libs)
    {
        lua_pushcfunction(L, open, nullptr);
        lua_call(L, 0, 0);
    }

    lua_pushvalue(L, LUA_GLOBALSINDEX);

    // Base functions the sandbox does not offer: environment access defeats
    // the per-script environment, and the others expose the collector.
    const char* const removed[] = {"getfenv", "setfenv", "gcinfo", "newproxy", "collectgarbage", nullptr};
    removeFields(L, removed);

    lua_pushcfunction(L, luaPrint, "print");
    lua_setfield(L, -2, "print");
    lua_pushcfunction(L, luaProgress, "progress");
    lua_setfield(L, -2, "progress");

    lua_newtable(L);
    ts_open_json(L);
    lua_setfield(L, -2, "json");

    lua_pop(L, 1);

    ts_open_sdk(L, state.sdkManifest, state.sdkManifestLen);
    ts_open_parallel(L);

    // Library tables, the globals and the string metatable become
    // read-only now, while the instance waits in the host's pool. Each
    // script then gets its own writable environment (luaL_sandboxthread in
    // ts_run) whose reads fall through to these globals.
    luaL_sandbox(L);
    return 0;
}

// Records the line of the innermost Lua function on the stack when an error
// escapes the script; returns the error value unchanged.
int errorHandler(lua_State* L)
{
    lua_Debug ar;
    for (int level = 0; lua_getinfo(L, level, "sl", &ar); level++)
    {
        if (ar.currentline > 0)
        {
            state.errorLine = ar.currentline;
            break;
        }
    }
    return 1;
}

void setOut(const char* data, size_t len, TsKind kind, int line)
{
    out.ptr = uint32_t(uintptr_t(data));
    out.len = uint32_t(len);
    out.kind = kind;
    out.line = line;
}

void setOutScratch(std::string message, TsKind kind, int line)
{
    state.scratch = std::move(message);
    setOut(state.scratch.data(), state.scratch.size(), kind, line);
}

int encodeResult(lua_State* L)
{
    size_t cap = size_t(lua_tonumber(L, 2));
    lua_settop(L, 1);
    ts_json_encode(L, 1, "result", cap);
    return 1;
}

// Turns the error value on top of the stack into a message string.
int describeError(lua_State* L)
{
    if (lua_type(L, 1) == LUA_TSTRING)
        return 1;
    if (lua_type(L, 1) == LUA_TNUMBER || luaL_getmetafield(L, 1, "__tostring"))
    {
        lua_settop(L, 1);
        luaL_tolstring(L, 1, nullptr);
        return 1;
    }
    if (lua_isnil(L, 1))
    {
        // As Luau's own tostring says it (JSON would say null).
        lua_pushliteral(L, "nil");
        return 1;
    }
    // An error object is shown as JSON, cut to kMaxErrorObjectBytes.
    ts_json_describe(L, 1, "error", kMaxErrorObjectBytes);
    return 1;
}

// Classifies the error value on top of the stack.
TsKind errorKind(lua_State* L, int status)
{
    if (status == LUA_ERRMEM)
        return TS_MEMORY;
    lua_getfield(L, LUA_REGISTRYINDEX, kTagKey);
    bool tagged = !lua_isnil(L, -1) && lua_rawequal(L, -1, -2);
    lua_pop(L, 1);
    if (tagged)
        return state.tagKind;
    if (ts_is_sdk_error(L, -1))
        return TS_UPSTREAM;
    if (state.heapLimitHit && lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "not enough memory") == 0)
        return TS_MEMORY;
    return TS_RUNTIME;
}

// Reports the error value on top of the stack as the outcome.
void reportError(lua_State* L, int status)
{
    TsKind kind = errorKind(L, status);
    if (kind == TS_MEMORY)
    {
        char message[96];
        snprintf(message, sizeof(message), "not enough memory: the script exceeded its memory limit of %zu bytes", state.heapLimit);
        setOutScratch(message, kind, state.errorLine);
        return;
    }

    lua_pushcfunction(L, describeError, "describeError");
    lua_insert(L, -2);
    if (lua_pcall(L, 1, 1, 0) != 0)
    {
        lua_pop(L, 1);
        lua_pushstring(L, "error object could not be converted to a message");
    }
    size_t len;
    const char* message = lua_tolstring(L, -1, &len);
    setOut(message, len, kind, state.errorLine);
}

// Compiles source into bytecode. On a syntax error sets the outcome and
// returns false. Errors the compiler throws (limits such as too many
// registers) reach __cxa_throw below and unwind through the host.
bool compileSource(const char* source, size_t len, std::string& bytecode)
{
    // Bytecode is never loaded: a chunk that starts like one is refused
    // before parsing, with a message saying why.
    if (len > 0 && (source[0] == '\x1b' || source[0] == '\0' || (unsigned char)source[0] < 8))
    {
        setOutScratch("script:1: binary chunks are not accepted; scripts must be Luau source text", TS_SYNTAX, 1);
        return false;
    }

    Luau::Allocator allocator;
    Luau::AstNameTable names(allocator);
    Luau::ParseOptions parseOptions;
    Luau::ParseResult parsed = Luau::Parser::parse(source, len, names, allocator, parseOptions);
    if (!parsed.errors.empty())
    {
        const Luau::ParseError& first = parsed.errors.front();
        int line = first.getLocation().begin.line + 1;
        setOutScratch("script:" + std::to_string(line) + ": " + first.what(), TS_SYNTAX, line);
        return false;
    }

    Luau::BytecodeBuilder builder;
    Luau::CompileOptions options;
    options.optimizationLevel = 1;
    options.debugLevel = 1;
    Luau::compileOrThrow(builder, parsed, names, options);
    bytecode = builder.getBytecode();
    return true;
}

} // namespace

lua_State* ts_state()
{
    return state.L;
}

void ts_work(size_t units)
{
    if (units < state.workLeft)
    {
        state.workLeft -= units;
        return;
    }
    state.workLeft = kWorkQuantum;
    ts_host_tick();
}

bool ts_heap_charge(size_t bytes)
{
    if (bytes > state.heapLimit || state.heapUsed > state.heapLimit - bytes)
    {
        state.heapLimitHit = true;
        return false;
    }
    state.heapUsed += bytes;
    return true;
}

void ts_heap_release(size_t bytes)
{
    state.heapUsed -= bytes;
}

[[noreturn]] void ts_raise_memory(lua_State* L)
{
    state.heapLimitHit = true;
    luaD_throw(L, LUA_ERRMEM);
}

void HeapBuffer::release()
{
    free(bytes);
    ts_heap_release(capacity);
}

bool HeapBuffer::append(const char* s)
{
    return append(s, strlen(s));
}

bool HeapBuffer::appendSlow(const char* p, size_t n)
{
    if (!ok())
        return false;
    if (n > cap - len)
    {
        capExceeded = true;
        return false;
    }
    if (n > capacity - len && !grow(len + n))
        return false;
    memcpy(bytes + len, p, n);
    len += n;
    return true;
}

bool HeapBuffer::grow(size_t need)
{
    // append guarantees need <= cap. Try doubling (within the cap), then
    // exactly what is needed.
    size_t doubled = capacity < 128 ? 256 : capacity * 2;
    size_t sizes[2] = {doubled < need ? need : (doubled > cap ? cap : doubled), need};
    for (size_t size : sizes)
    {
        if (!ts_heap_charge(size - capacity))
            continue;
        if (char* grown = static_cast<char*>(realloc(bytes, size)))
        {
            bytes = grown;
            capacity = size;
            return true;
        }
        ts_heap_release(size - capacity);
    }
    memoryExceeded = true;
    return false;
}

[[noreturn]] void ts_raise_tagged(lua_State* L, TsKind kind, const char* fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    lua_pushvfstring(L, fmt, args);
    va_end(args);
    ts_raise_tagged_top(L, kind);
}

[[noreturn]] void ts_raise_tagged_top(lua_State* L, TsKind kind)
{
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, kTagKey);
    state.tagKind = kind;
    lua_error(L);
}

extern "C"
{

// Creates the Luau state and its environment. heapLimit caps the bytes the
// Luau heap may hold until ts_run sets the script's own limit. Returns 0, or
// a TsKind on failure.
TS_EXPORT("ts_init") int ts_init(uint32_t heapLimit)
{
    state.heapLimit = heapLimit;
    lua_State* L = lua_newstate(limitedAlloc, nullptr);
    if (L == nullptr)
        return TS_MEMORY;
    state.L = L;
    lua_callbacks(L)->interrupt = interrupt;

    lua_pushcfunction(L, openEnvironment, "openEnvironment");
    int status = lua_pcall(L, 0, 0, 0);
    if (status != 0)
        return status == LUA_ERRMEM ? TS_MEMORY : TS_INTERNAL;

    // Grow the heap now: the host restores every later instance from an
    // image of this one's memory, at this size, so that a small script
    // does not have to grow the memory.
    if (char* warm = static_cast<char*>(malloc(kWarmHeapBytes)))
    {
        // volatile: otherwise the compiler removes the unused allocation
        for (size_t i = 0; i < kWarmHeapBytes; i += 4096)
            static_cast<volatile char*>(warm)[i] = 0;
        free(warm);
    }
    return TS_OK;
}

// Hands over the sdk's manifest (JSON, host/runtime/luau's SDKManifest) before
// ts_init builds the environment; the bytes must stay where they are.
TS_EXPORT("ts_set_sdk") void ts_set_sdk(const char* manifest, size_t len)
{
    state.sdkManifest = manifest;
    state.sdkManifestLen = len;
}

TS_EXPORT("ts_malloc") void* ts_malloc(size_t size)
{
    return malloc(size);
}

TS_EXPORT("ts_free") void ts_free(void* ptr)
{
    free(ptr);
}

// A buffer of TS_INPUT_SIZE bytes the host writes a small
// script and its arguments into, saving the call to ts_malloc that larger
// ones need.
TS_EXPORT("ts_input_addr") char* ts_input_addr()
{
    static char input[TS_INPUT_SIZE];
    return input;
}

// The version of the guest/host ABI (abi.h) this module speaks: the host
// checks it before anything else.
TS_EXPORT("ts_abi_version") uint32_t ts_abi_version()
{
    return TS_ABI_VERSION;
}

TS_EXPORT("ts_out_addr") Out* ts_out_addr()
{
    return &out;
}

// Runs f(L, ud) for the host's implementation of luaD_rawrunprotected.
TS_EXPORT("ts_trampoline") void ts_trampoline(void (*f)(lua_State*, void*), lua_State* L, void* ud)
{
    f(L, ud);
}

// Compiles and runs one script. args holds nargs strings, each a 32-bit
// little-endian length followed by its bytes; the script receives them as
// `...`. resultCap bounds the result's JSON text and heapLimit the bytes the
// Luau heap may hold; flags (TS_FLAG_*) add optional libraries; seed seeds
// math.random. Returns the outcome's kind; the outcome itself is in ts_out.
TS_EXPORT("ts_run") int ts_run(
    const char* source, size_t len, const char* args, uint32_t nargs, uint32_t resultCap, uint32_t heapLimit, uint32_t flags,
    uint32_t seed)
{
    lua_State* L = state.L;
    out = Out{};
    state.heapLimit = heapLimit;

    // The host restores instances from a copy of one initialised instance's
    // memory, so the generator state luaopen_math seeded is the same in
    // every instance: each execution gets its own seed.
    lua_getglobal(L, "math");
    lua_getfield(L, -1, "randomseed");
    lua_pushinteger(L, int(seed));
    lua_call(L, 1, 0);
    lua_pop(L, 1);

    std::string bytecode;
    if (!compileSource(source, len, bytecode))
        return out.kind;

    // The script's own global table. Anything added to the environment for
    // this execution only (io when it is enabled) goes into it here, before
    // luau_load resolves the script's imports.
    luaL_sandboxthread(L);
    // _G is the script's own environment, as it is in Lua: after x = 1,
    // _G.x is 1, and _G.y = 1 defines y.
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    lua_setfield(L, LUA_GLOBALSINDEX, "_G");
    if (flags & TS_FLAG_IO)
    {
        lua_pushcfunction(L, [](lua_State* L) {
            ts_open_io(L);
            return 0;
        }, "openIO");
        if (lua_pcall(L, 0, 0, 0) != 0)
        {
            setOutScratch("not enough memory to set up the io library", TS_MEMORY, 0);
            return out.kind;
        }
    }

    lua_pushcfunction(L, errorHandler, "errorHandler");
    int handler = lua_gettop(L);
    if (luau_load(L, kChunkName, bytecode.data(), bytecode.size(), 0) != 0)
    {
        setOut(lua_tostring(L, -1), strlen(lua_tostring(L, -1)), TS_INTERNAL, 0);
        return out.kind;
    }
    bytecode.clear();
    bytecode.shrink_to_fit();

    if (!lua_checkstack(L, int(nargs) + 4))
    {
        setOutScratch("too many script arguments", TS_LIMIT, 0);
        return out.kind;
    }
    for (uint32_t i = 0; i < nargs; i++)
    {
        uint32_t n;
        memcpy(&n, args, 4);
        lua_pushlstring(L, args + 4, n);
        args += 4 + n;
    }

    state.running = true;
    int status = lua_pcall(L, int(nargs), 1, handler);
    if (status != 0)
    {
        reportError(L, status);
        return out.kind;
    }

    if (lua_isnil(L, -1))
    {
        setOut("null", 4, TS_OK, 0);
        return TS_OK;
    }

    lua_pushcfunction(L, encodeResult, "encodeResult");
    lua_insert(L, -2);
    lua_pushnumber(L, double(resultCap));
    status = lua_pcall(L, 2, 1, 0);
    if (status != 0)
    {
        state.errorLine = 0;
        reportError(L, status);
        return out.kind;
    }
    size_t jsonLen;
    const char* json = lua_tolstring(L, -1, &jsonLen);
    setOut(json, jsonLen, TS_OK, 0);
    return TS_OK;
}

#if defined(__wasm__)
// Without the wasm exception-handling proposal clang drops catch blocks and
// every C++ throw ends here. Luau's VM never throws (its errors go through
// luaD_throw); the compiler throws CompileError on limits such as register
// exhaustion. The host is told the message and abandons the instance.
void* __cxa_allocate_exception(size_t size) noexcept
{
    return malloc(size);
}

void __cxa_free_exception(void* ptr) noexcept
{
    free(ptr);
}

[[noreturn]] void __cxa_throw(void* thrown, std::type_info* type, void (*destructor)(void*))
{
    (void)destructor;
    const char* message = "internal error: an exception was raised by the Luau front end";
    int line = 0;
    if (type != nullptr && *type == typeid(Luau::CompileError))
    {
        auto* error = static_cast<Luau::CompileError*>(thrown);
        message = error->what();
        line = error->getLocation().begin.line + 1;
    }
    else if (type != nullptr && *type == typeid(Luau::ParseError))
    {
        // The parser throws, instead of collecting, past its limits (such
        // as nesting deeper than 1,000 levels).
        auto* error = static_cast<Luau::ParseError*>(thrown);
        message = error->what();
        line = error->getLocation().begin.line + 1;
    }
    else if (type != nullptr && *type == typeid(std::bad_alloc))
    {
        // Memory ran out outside the Luau heap. While the script runs this
        // is its own out-of-memory error, catchable as Luau's own; before,
        // the front end could not compile it (line -1 tells the host).
        if (state.running)
            ts_raise_memory(state.L);
        message = "not enough memory to compile the script";
        line = TS_ABORT_OUT_OF_MEMORY;
    }
    ts_host_abort(message, strlen(message), line);
}
#endif

} // extern "C"
