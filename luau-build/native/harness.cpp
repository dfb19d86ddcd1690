// harness.cpp: runs the toolscript shim natively, for benchmarks only.
//
// The wasm build of the shim imports a few functions from the Go host
// (luau-build/shim/toolscript_host.h). This file implements them natively so
// that the same shim and the same patched Luau source can be compiled for the
// machine and timed against the wasm build. It is not a product: it has no
// sandboxing beyond the shim's own, no io, no deadlines.
//
// Usage: luau-native SCRIPT [REPETITIONS]
//
// Each repetition runs in a forked child, exactly as the Go host runs each
// execution in a fresh instance: the child calls ts_init (a new Luau state
// with the sandboxed environment) and ts_run (compile and run the script),
// and times those two calls with CLOCK_MONOTONIC. The parent never touches
// the shim's global state, so every repetition starts from the same process
// image. The output is one JSON object on stdout:
//
//   {"script": "...", "compiler": "...", "unwind": "c++-exceptions",
//    "times_ns": [...], "kind": 0, "result": <JSON>}
//
// result is the JSON text the script returned (kind 0) or the error message
// as a JSON string (other kinds, see TsKind in shim.h).
//
// Error recovery: luaD_rawrunprotected and luaD_throw reach this file through
// ts_host_rawrunprotected and ts_host_throw (luau-build/patches/
// ldo-host-unwind.patch). They are implemented with C++ exceptions, which is
// what upstream Luau itself uses natively (LUA_USE_LONGJMP defaults to 0):
//  - a throw unwinds to the innermost active try block, so nested pcalls,
//    error handlers and errors inside error handlers behave as in upstream;
//  - unlike longjmp, unwinding runs the destructors of C++ locals between
//    the throw and the catch (the shim's JSON encoder and the Luau front end
//    hold std::string and std::vector while Lua errors can be raised);
//  - the protected path costs nothing (zero-cost exception tables); a caught
//    error costs a table-driven unwind (about a microsecond), which is the
//    price upstream's native build pays too.
#include "json_string.h"
#include "shim.h"
#include "toolscript_host.h"

#include "lua.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <exception>
#include <string>
#include <vector>

// The shim's exports (toolscript.cpp). ts_out_addr returns the shim's Out,
// whose layout (ptr, len, line, kind: 32-bit words) is mirrored here.
struct TsOut
{
    uint32_t ptr;
    uint32_t len;
    int32_t line;
    int32_t kind;
};

extern "C"
{
    int ts_init(uint32_t heapLimit);
    int ts_run(const char* source, size_t len, const char* args, uint32_t nargs, uint32_t resultCap, uint32_t heapLimit, uint32_t flags, uint32_t seed);
    TsOut* ts_out_addr();
}

namespace
{

// The limits the Go host passes (host/runtime/luau/abi.go initHeapLimit, and the
// defaults of luau.Limits).
const uint32_t kInitHeapLimit = 16u << 20;
const uint32_t kHeapLimit = 64u << 20;
const uint32_t kResultCap = 4u << 20;

// The exception ts_host_throw raises; only ts_host_rawrunprotected catches it.
struct LuaThrow
{
    int status;
};

// A C++ exception that escaped ts_run: the wasm build turns these into
// ts_host_abort; natively they simply propagate to main.
const int kAbortKind = 100;

void writeAll(int fd, const void* data, size_t len)
{
    const char* p = static_cast<const char*>(data);
    while (len > 0)
    {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(3);
        p += n;
        len -= size_t(n);
    }
}

bool readAll(int fd, std::string& out)
{
    char buf[65536];
    for (;;)
    {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return false;
        if (n == 0)
            return true;
        out.append(buf, size_t(n));
    }
}

int64_t nowNs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The outcome's text. Out.ptr holds only the low 32 bits of the address (the
// shim is written for wasm32), so the text is recovered from the Lua stack,
// where ts_run leaves the result (or the error message it reports), after
// checking that it is the same string.
std::string outcomeText(const TsOut& out)
{
    lua_State* L = ts_state();
    if (L != nullptr && out.kind == TS_OK && lua_gettop(L) > 0 && lua_isnil(L, -1))
        return "null"; // a script that returns nothing or nil
    if (L != nullptr && lua_gettop(L) > 0 && lua_type(L, -1) == LUA_TSTRING)
    {
        size_t len;
        const char* s = lua_tolstring(L, -1, &len);
        if (len == out.len && uint32_t(uintptr_t(s)) == out.ptr)
            return std::string(s, len);
    }
    return "(the outcome's text is not on the Lua stack; kind " + std::to_string(out.kind) + ")";
}

// Runs one execution in this (child) process and writes "ns kind len\n"
// followed by the outcome's text to fd.
void runChild(const std::string& source, int fd)
{
    int kind = 0;
    std::string text;
    int64_t start = nowNs();
    try
    {
        kind = ts_init(kInitHeapLimit);
        if (kind == TS_OK)
            kind = ts_run(source.data(), source.size(), nullptr, 0, kResultCap, kHeapLimit, 0, uint32_t(start));
    }
    catch (std::exception& e)
    {
        kind = kAbortKind;
        text = e.what();
    }
    catch (...)
    {
        kind = kAbortKind;
        text = "unknown C++ exception";
    }
    int64_t elapsed = nowNs() - start;
    if (kind != kAbortKind)
        text = outcomeText(*ts_out_addr());

    char header[64];
    int n = snprintf(header, sizeof(header), "%lld %d %zu\n", (long long)elapsed, kind, text.size());
    writeAll(fd, header, size_t(n));
    writeAll(fd, text.data(), text.size());
}

#if defined(__clang__)
const char* const kCompiler = "clang " __clang_version__;
#elif defined(__GNUC__)
const char* const kCompiler = "g++ " __VERSION__;
#else
const char* const kCompiler = "unknown";
#endif

} // namespace

// The host imports (toolscript_host.h).
extern "C"
{

int ts_host_rawrunprotected(lua_State* L, void (*f)(lua_State*, void*), void* ud)
{
    try
    {
        f(L, ud);
        return 0;
    }
    catch (LuaThrow& t)
    {
        return t.status;
    }
}

void ts_host_throw(lua_State* L, int errcode)
{
    (void)L;
    throw LuaThrow{errcode};
}

// The Go host checks deadlines here; benchmarks have none.
void ts_host_tick(void) {}

void ts_host_print(const char* line, size_t len)
{
    // Discarded, as a benchmark's output would be: a script that prints
    // measures building the line, not the terminal.
    (void)line;
    (void)len;
}

void ts_host_abort(const char* message, size_t len, int line)
{
    // Only the wasm build calls this (from its __cxa_throw).
    fprintf(stderr, "luau-native: front end aborted at line %d: %.*s\n", line, int(len), message);
    exit(2);
}

void ts_host_progress(double done, double total, const char* message, size_t len)
{
    (void)done;
    (void)total;
    (void)message;
    (void)len;
}

// The io library is not used by the benchmarks (ts_run gets no io flag);
// these keep the link complete and fail if ever called.
static const char kNoIO[] = "io is not available in the native benchmark harness";

int32_t ts_host_io_open(const char*, size_t, const char*, size_t) { return TS_IO_FAILED; }
int32_t ts_host_io_read(int32_t, char*, size_t) { return TS_IO_FAILED; }
int32_t ts_host_io_write(int32_t, const char*, size_t) { return TS_IO_FAILED; }
int64_t ts_host_io_seek(int32_t, int32_t, int64_t) { return TS_IO_FAILED; }
int32_t ts_host_io_flush(int32_t) { return TS_IO_FAILED; }
int32_t ts_host_io_close(int32_t) { return TS_IO_FAILED; }
int32_t ts_host_io_list(const char*, size_t) { return TS_IO_FAILED; }
int32_t ts_host_io_remove(const char*, size_t) { return TS_IO_FAILED; }
int32_t ts_host_io_stat(const char*, size_t) { return TS_IO_FAILED; }
int32_t ts_host_io_glob(const char*, size_t) { return TS_IO_FAILED; }
int32_t ts_host_io_grep(const char*, size_t, const char*, size_t, const char*, size_t) { return TS_IO_FAILED; }
int32_t ts_host_io_edit(const char*, size_t, const char*, size_t, const char*, size_t, int32_t) { return TS_IO_FAILED; }
int32_t ts_host_io_rename(const char*, size_t, const char*, size_t) { return TS_IO_FAILED; }
int32_t ts_host_io_take(char* buf, size_t len)
{
    size_t n = len < sizeof(kNoIO) - 1 ? len : sizeof(kNoIO) - 1;
    memcpy(buf, kNoIO, n);
    return int32_t(n);
}

} // extern "C"

int main(int argc, char** argv)
{
    if (argc < 2 || argc > 3)
    {
        fprintf(stderr, "usage: %s SCRIPT [REPETITIONS]\n", argv[0]);
        return 2;
    }
    const char* path = argv[1];
    int reps = argc == 3 ? atoi(argv[2]) : 1;
    if (reps < 1)
    {
        fprintf(stderr, "luau-native: repetitions must be at least 1\n");
        return 2;
    }

    std::string source;
    FILE* f = fopen(path, "rb");
    if (f == nullptr)
    {
        fprintf(stderr, "luau-native: %s: %s\n", path, strerror(errno));
        return 2;
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        source.append(buf, n);
    fclose(f);

    std::vector<long long> times;
    int kind = 0;
    std::string text;
    for (int i = 0; i < reps; i++)
    {
        int fds[2];
        if (pipe(fds) != 0)
        {
            perror("luau-native: pipe");
            return 2;
        }
        fflush(nullptr);
        pid_t pid = fork();
        if (pid < 0)
        {
            perror("luau-native: fork");
            return 2;
        }
        if (pid == 0)
        {
            close(fds[0]);
            runChild(source, fds[1]);
            close(fds[1]);
            _exit(0);
        }
        close(fds[1]);
        std::string record;
        bool ok = readAll(fds[0], record);
        close(fds[0]);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        {
        }
        if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        {
            fprintf(stderr, "luau-native: repetition %d failed (wait status %d)\n", i + 1, status);
            return 1;
        }
        long long ns;
        int k;
        size_t len;
        int consumed = 0;
        if (sscanf(record.c_str(), "%lld %d %zu\n%n", &ns, &k, &len, &consumed) != 3 || record.size() != size_t(consumed) + len)
        {
            fprintf(stderr, "luau-native: repetition %d: malformed report\n", i + 1);
            return 1;
        }
        std::string t = record.substr(size_t(consumed));
        if (i > 0 && (k != kind || t != text))
        {
            fprintf(stderr, "luau-native: repetition %d returned a different outcome\n", i + 1);
            return 1;
        }
        kind = k;
        text = t;
        times.push_back(ns);
    }

    std::string json = "{\"script\":";
    appendJSONString(json, path);
    json += ",\"compiler\":";
    appendJSONString(json, kCompiler);
    json += ",\"unwind\":\"c++-exceptions\",\"times_ns\":[";
    for (size_t i = 0; i < times.size(); i++)
    {
        if (i > 0)
            json += ',';
        json += std::to_string(times[i]);
    }
    json += "],\"kind\":" + std::to_string(kind) + ",\"result\":";
    if (kind == TS_OK)
        json += text;
    else
        appendJSONString(json, text);
    json += "}\n";
    fputs(json.c_str(), stdout);
    return kind == TS_OK ? 0 : 1;
}
