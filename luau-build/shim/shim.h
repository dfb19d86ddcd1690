// shim.h: declarations shared by the shim's translation units.
#pragma once

#include "abi.h"
#include "lua.h"
#include "lualib.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

// Kinds of failure reported to the host (abi.h).
enum TsKind
{
    TS_OK = TS_KIND_OK,
    TS_SYNTAX = TS_KIND_SYNTAX,
    TS_RUNTIME = TS_KIND_RUNTIME,
    TS_MEMORY = TS_KIND_MEMORY,
    TS_LIMIT = TS_KIND_LIMIT,
    TS_IO = TS_KIND_IO,
    TS_INTERNAL = TS_KIND_INTERNAL,
    TS_UPSTREAM = TS_KIND_UPSTREAM,
};

static_assert(LUA_ERRMEM == TS_LUA_ERRMEM, "abi.h: TS_LUA_ERRMEM is Luau's LUA_ERRMEM");

// Adds io, os (with remove) and the deprecated file.save to the script's
// environment table (LUA_GLOBALSINDEX of L after luaL_sandboxthread).
void ts_open_io(lua_State* L);

// Registers the json table (encode, decode, null, object) in the table on top
// of the stack.
void ts_open_json(lua_State* L);

// Encodes the value at idx as JSON and pushes the resulting string. root names
// the value in error messages ("result", "value"). Raises a Lua error when the
// value cannot be converted, or (tagged TS_LIMIT) when the text would exceed
// cap bytes.
void ts_json_encode(lua_State* L, int idx, const char* root, size_t cap);

// Decodes the JSON text s (json.decode's rules) and pushes the value;
// raises json.decode's error on invalid JSON, the memory error past the
// memory limit.
void ts_json_decode(lua_State* L, const char* s, size_t len);

// Builds the read-only sdk table from its manifest (JSON: host/runtime/luau's
// SDKManifest) and sets it as the global sdk; with no manifest, sdk is an
// empty read-only table. Runs before luaL_sandbox, from ts_init.
void ts_open_sdk(lua_State* L, const char* manifest, size_t len);

// The registry key of the sdk's manifest, as a Luau table (lint reads it).
extern const char* const ts_sdk_manifest_key;

// Adds parallel(fns, limit?) to the globals (parallel.cpp).
void ts_open_parallel(lua_State* L);

// Whether an sdk call on L should yield its request to a parallel
// scheduler: L is one of parallel's coroutines and can yield here.
bool ts_parallel_yieldable(lua_State* L);

// Yields the request of an sdk call (function id, the arguments' JSON on top
// of the stack) to the parallel scheduler; returns lua_yield's value.
int ts_parallel_yield(lua_State* L, uint32_t id);

// Classifies the error value on top of the stack: true when it is an sdk
// call's error table (kind upstream when it escapes the script).
bool ts_is_sdk_error(lua_State* L, int idx);

// Like ts_json_encode, but text past cap bytes is cut, with a marker,
// instead of raising: for describing error objects.
void ts_json_describe(lua_State* L, int idx, const char* root, size_t cap);

// Raises a Lua error carrying message and remembers that it is of the given
// kind, so that the host can classify it if it escapes the script.
[[noreturn]] void ts_raise_tagged(lua_State* L, TsKind kind, const char* fmt, ...);

// The instance's Luau state, created by ts_init (null before). Lint reads
// the sandbox's globals from it.
lua_State* ts_state();

// Counts units of work done in C code that never reaches the VM's
// interrupt (converting values, scanning tables). Every kWorkQuantum units
// it calls the host's tick, where the deadline and cancellation stop the
// script and Go's scheduler gets a safe point. A unit is about one step of
// a loop: one value converted, one table slot scanned, one byte escaped.
void ts_work(size_t units);

// Charges bytes held outside the Luau heap (the converters' buffers)
// against the script's heap limit. Returns false, and charges nothing, when
// they do not fit; ts_heap_release gives them back.
bool ts_heap_charge(size_t bytes);
void ts_heap_release(size_t bytes);

// Raises the script's out-of-memory error (LUA_ERRMEM, catchable by pcall,
// kind memory when it escapes), as Luau's own allocation failures do.
[[noreturn]] void ts_raise_memory(lua_State* L);

// HeapBuffer is a byte buffer outside the Luau heap whose capacity counts
// against the script's heap limit (ts_heap_charge). Appending past the
// limit, or past a cap the user sets, fails: the buffer then keeps what it
// has, ignores further appends and says why in memoryExceeded or
// capExceeded. Nothing it does throws.
class HeapBuffer
{
public:
    explicit HeapBuffer(size_t cap = SIZE_MAX)
        : cap(cap)
    {
    }
    ~HeapBuffer()
    {
        if (bytes != nullptr) // most decoders never use theirs
            release();
    }
    HeapBuffer(const HeapBuffer&) = delete;
    HeapBuffer& operator=(const HeapBuffer&) = delete;

    bool append(const char* p, size_t n)
    {
        // The common case inline: room for it, nothing failed before.
        if (bytes != nullptr && n <= capacity - len && n <= cap - len && ok())
        {
            memcpy(bytes + len, p, n);
            len += n;
            return true;
        }
        return appendSlow(p, n);
    }
    bool append(const char* s);
    bool push(char c)
    {
        if (len < capacity && len < cap)
        {
            bytes[len++] = c;
            return true;
        }
        return append(&c, 1);
    }
    void clear()
    {
        len = 0;
    }
    // truncate drops what was appended after the first n bytes.
    void truncate(size_t n)
    {
        if (n < len)
            len = n;
    }
    bool ok() const
    {
        return !memoryExceeded && !capExceeded;
    }

    const char* data() const
    {
        return bytes ? bytes : "";
    }
    size_t size() const
    {
        return len;
    }

    bool memoryExceeded = false;
    bool capExceeded = false;

private:
    bool grow(size_t need);
    bool appendSlow(const char* p, size_t n);
    void release();

    char* bytes = nullptr;
    size_t len = 0;
    size_t capacity = 0;
    size_t cap;
};

// Like ts_raise_tagged, with the message the string on top of the stack
// (which may hold any bytes, NUL included).
[[noreturn]] void ts_raise_tagged_top(lua_State* L, TsKind kind);
