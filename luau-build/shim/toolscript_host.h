// host.h declares the functions the toolscript host (Go, under wazero)
// provides to the Luau module, and the few the shim exports back.
//
// In the wasm build these are imports of the "toolscript" module. The native
// build used for benchmarks links the same names from native/harness.cpp.
#pragma once

#include <stddef.h>
#include <stdint.h>

struct lua_State;

#if defined(__wasm__)
#define TS_IMPORT(name) __attribute__((import_module("toolscript"), import_name(name)))
#define TS_EXPORT(name) __attribute__((export_name(name)))
#else
#define TS_IMPORT(name)
#define TS_EXPORT(name) __attribute__((visibility("default")))
#endif

extern "C"
{
    // Runs f(L, ud) through the exported ts_trampoline and returns the Lua
    // status of the call: 0, or the errcode passed to ts_host_throw.
    TS_IMPORT("rawrunprotected") int ts_host_rawrunprotected(lua_State* L, void (*f)(lua_State*, void*), void* ud);

    // Unwinds to the innermost ts_host_rawrunprotected with errcode.
    [[noreturn]] TS_IMPORT("throw") void ts_host_throw(lua_State* L, int errcode);

    // Called every few thousand safepoints: a safe point for the Go
    // scheduler, and where the host stops a script whose deadline passed or
    // whose caller cancelled it (by unwinding the whole execution; the
    // instance is discarded afterwards).
    TS_IMPORT("tick") void ts_host_tick(void);

    // One print() line (arguments already tostring'ed and tab-joined).
    TS_IMPORT("print") void ts_host_print(const char* line, size_t len);

    // An exception escaped the C++ front end (compiler or parser); the
    // message and 1-based line are handed over and the execution unwinds.
    [[noreturn]] TS_IMPORT("abort") void ts_host_abort(const char* message, size_t len, int line);

    // The io library (io.cpp over host/runtime/luau/io.go). Calls return a negative
    // status on failure (abi.h: TS_IO_FAILED, TS_IO_OVER_LIMIT) and leave a
    // message for io_take.
    TS_IMPORT("io_open") int32_t ts_host_io_open(const char* path, size_t pathLen, const char* mode, size_t modeLen);
    TS_IMPORT("io_read") int32_t ts_host_io_read(int32_t handle, char* buf, size_t len);
    TS_IMPORT("io_write") int32_t ts_host_io_write(int32_t handle, const char* buf, size_t len);
    TS_IMPORT("io_seek") int64_t ts_host_io_seek(int32_t handle, int32_t whence, int64_t offset);
    TS_IMPORT("io_flush") int32_t ts_host_io_flush(int32_t handle);
    TS_IMPORT("io_close") int32_t ts_host_io_close(int32_t handle);
    TS_IMPORT("io_list") int32_t ts_host_io_list(const char* path, size_t len);
    TS_IMPORT("io_remove") int32_t ts_host_io_remove(const char* path, size_t len);
    TS_IMPORT("io_take") int32_t ts_host_io_take(char* buf, size_t len);
    // io.stat, io.glob and io.grep leave their result pending (abi.h:
    // TS_IO_STAT_*, TS_IO_GREP_HEADER; a glob's paths NUL-separated) and
    // return its length.
    TS_IMPORT("io_stat") int32_t ts_host_io_stat(const char* path, size_t len);
    TS_IMPORT("io_glob") int32_t ts_host_io_glob(const char* pattern, size_t len);
    TS_IMPORT("io_grep") int32_t ts_host_io_grep(
        const char* pattern, size_t patternLen, const char* path, size_t pathLen, const char* filter, size_t filterLen);
    // io.edit: returns how many occurrences it replaced.
    TS_IMPORT("io_edit") int32_t ts_host_io_edit(
        const char* path, size_t pathLen, const char* old, size_t oldLen, const char* replacement, size_t replacementLen, int32_t all);
    TS_IMPORT("io_rename") int32_t ts_host_io_rename(const char* from, size_t fromLen, const char* to, size_t toLen);

    // One sdk call: function id with its arguments as a JSON array. The host
    // checks them, makes the request, writes the response envelope into a
    // buffer it gets from the exported ts_sdk_buffer(L, len) (a userdata it
    // leaves on L's stack) and returns the envelope's length.
    TS_IMPORT("sdk_call") uint32_t ts_host_sdk_call(lua_State* L, uint32_t id, const char* args, size_t len);

    // parallel: starts the requests of a batch (repeated: token, function
    // id, argument length, arguments; 32-bit little-endian words), at most
    // limit at once (0: the configured maximum, which also caps a larger
    // limit), and returns at once.
    TS_IMPORT("sdk_submit") void ts_host_sdk_submit(lua_State* L, const char* batch, size_t len, uint32_t limit);

    // parallel: waits until at least one of the requests named by tokens
    // has completed, moves the tokens of those that have to the front of
    // tokens (in their order there) and returns how many they are. Their
    // responses wait on the host for ts_host_sdk_take.
    TS_IMPORT("sdk_wait") uint32_t ts_host_sdk_wait(lua_State* L, uint32_t* tokens, size_t count);

    // parallel: hands over the completed response of the request token
    // (once): writes its envelope into a userdata it leaves on L's stack
    // (ts_sdk_buffer) and returns the envelope's length. L is the
    // coroutine that made the request, so that running out of memory there
    // is raised in it, where its own pcall catches it.
    TS_IMPORT("sdk_take") uint32_t ts_host_sdk_take(lua_State* L, uint32_t token);

    // progress(done, total, message): total < 0 means absent.
    TS_IMPORT("progress") void ts_host_progress(double done, double total, const char* message, size_t len);
}
