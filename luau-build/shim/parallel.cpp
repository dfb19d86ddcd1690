// parallel.cpp: parallel(fns, limit?), concurrent sdk calls from one
// single-threaded Luau state.
//
// Each function runs in a coroutine of its own. An sdk call made in one of
// these coroutines yields its request (sdk.cpp) instead of blocking; when
// every coroutine is blocked or done, the pending requests go to the host in
// one call (ts_host_sdk_submit), which runs them concurrently, at most
// `limit` at once; ts_host_sdk_wait then says which requests have completed
// so far, and their coroutines resume, each taking its own response from
// the host (ts_host_sdk_take, in sdk.cpp) into its own stack: running out
// of memory there is the function's own error, which its pcall catches, as
// it is when the same call is made outside parallel. Functions that make no
// calls simply run to completion. When all are done, parallel returns their
// first return values in order, or raises the first error in list order.
//
// limit is nil (the execution's max_parallel) or a whole number >= 1 (at
// most max_parallel is used); anything else (0, a negative or fractional
// number, NaN, an infinity, a string...) is an error naming it.
#include "shim.h"
#include "toolscript_host.h"

#include "lua.h"
#include "lualib.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <string>
#include <vector>

namespace
{

const char* const kThreadsKey = "toolscript.parallel.threads";

// Where parallel keeps, on its stack, the functions' results, their errors
// and their coroutines (anchored until they are done).
const int results = 2, errors = 3, threads = 4;

// The marker an sdk call yields with, ahead of its function id and args.
char yieldMarker;

struct Task
{
    lua_State* co = nullptr;
    bool done = false;
    uint32_t token = 0; // the request it waits for; 0 when runnable
};

uint32_t nextToken = 0;

void put32(std::string& out, uint32_t v)
{
    out.append(reinterpret_cast<const char*>(&v), 4);
}

// Runs task i until it finishes, fails or yields a request. Its first
// return value goes to results[i], its error to errors[i]; a request is
// appended to batch.
void step(lua_State* L, std::vector<Task>& tasks, size_t i, int narg, std::string& batch)
{
    Task& t = tasks[i];
    lua_State* co = t.co;
    int status = lua_resume(co, L, narg);
    if (status == LUA_YIELD)
    {
        int n = lua_gettop(co);
        if (n == 3 && lua_touserdata(co, 1) == &yieldMarker)
        {
            size_t len;
            const char* args = lua_tolstring(co, 3, &len);
            t.token = ++nextToken;
            put32(batch, t.token);
            put32(batch, uint32_t(lua_tointeger(co, 2)));
            put32(batch, uint32_t(len)); // TS_SDK_BATCH_HEADER bytes so far
            batch.append(args, len);
            lua_settop(co, 0);
            return;
        }
        // A yield of the script's own, outside a coroutine of its own.
        lua_settop(co, 0);
        t.done = true;
        lua_pushliteral(L, "parallel: a function yielded (coroutine.yield) outside a coroutine of its own");
        lua_rawseti(L, errors, int(i + 1));
        return;
    }
    t.done = true;
    if (status == LUA_OK)
    {
        if (lua_gettop(co) > 0)
        {
            lua_settop(co, 1);
            lua_xmove(co, L, 1);
            lua_rawseti(L, results, int(i + 1));
        }
        return;
    }
    // The error value (a string, a table, an sdk error table...).
    lua_xmove(co, L, 1);
    lua_rawseti(L, errors, int(i + 1));
    // The dead coroutine's stack still holds what the function had: it is
    // let go, and when the function ran out of memory, collected at once,
    // as when a pcall catches the error (see luau-build/patches/
    // memory-error-collect.patch), so that the other functions have the
    // memory they would have had one after the other.
    lua_pushnil(L);
    lua_rawseti(L, threads, int(i + 1));
    if (status == LUA_ERRMEM)
        lua_gc(L, LUA_GCCOLLECT, 0);
}

// Runs the tasks until every one is done: resumes the runnable ones, hands
// their requests to the host, and resumes each with its response as the
// host completes them.
void schedule(lua_State* L, std::vector<Task>& tasks, uint32_t limit)
{
    std::string batch;
    std::vector<uint32_t> waiting;
    for (size_t i = 0; i < tasks.size(); i++)
        step(L, tasks, i, 0, batch);
    for (;;)
    {
        if (!batch.empty())
        {
            ts_host_sdk_submit(L, batch.data(), batch.size(), limit);
            batch.clear();
        }
        waiting.clear();
        for (const Task& t : tasks)
            if (!t.done && t.token != 0)
                waiting.push_back(t.token);
        if (waiting.empty())
            return;
        // The requests completed so far: the host moves their tokens to
        // the front of waiting. Nothing is allocated on L here: each
        // coroutine takes its response into its own stack when it resumes
        // (sdkCallContinue).
        size_t ready = ts_host_sdk_wait(L, waiting.data(), waiting.size());
        for (size_t k = 0; k < ready && k < waiting.size(); k++)
        {
            uint32_t token = waiting[k];
            for (size_t i = 0; i < tasks.size(); i++)
            {
                if (tasks[i].token != token || tasks[i].done)
                    continue;
                tasks[i].token = 0;
                lua_pushnumber(tasks[i].co, double(token));
                step(L, tasks, i, 1, batch);
                break;
            }
        }
    }
}

// parallelLimit is parallel's limit argument as ts_host_sdk_submit takes
// it: 0 for nil (the execution's max_parallel), else a whole number >= 1
// (the host uses at most max_parallel of it); anything else raises.
uint32_t parallelLimit(lua_State* L, int idx)
{
    if (lua_isnoneornil(L, idx))
        return 0;
    if (lua_type(L, idx) != LUA_TNUMBER)
        luaL_error(L, "parallel: limit must be nil or a whole number >= 1, got %s", luaL_typename(L, idx));
    double d = lua_tonumber(L, idx);
    if (!(d >= 1) || d != floor(d) || isinf(d))
        luaL_error(L, "parallel: limit must be nil or a whole number >= 1, got %s", luaL_tolstring(L, idx, nullptr));
    return d >= double(INT32_MAX) ? uint32_t(INT32_MAX) : uint32_t(d);
}

int parallel(lua_State* L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    uint32_t limit = parallelLimit(L, 2);
    int n = lua_objlen(L, 1);
    for (int i = 1; i <= n; i++)
    {
        lua_rawgeti(L, 1, i);
        if (!lua_isfunction(L, -1))
            luaL_error(L, "parallel: item %d is a %s, not a function", i, luaL_typename(L, -1));
        lua_pop(L, 1);
    }
    lua_settop(L, 1);
    // Both tables are made at their full size: storing a function's
    // result or error allocates nothing.
    lua_createtable(L, n, 0); // 2: results
    lua_createtable(L, n, 0); // 3: errors
    lua_createtable(L, n, 0); // 4: the coroutines, anchored
    lua_getfield(L, LUA_REGISTRYINDEX, kThreadsKey); // 5
    const int registered = 5;

    {
        // The C++ state lives in this block only: lua_error below does not
        // return, and would leak it.
        std::vector<Task> tasks(static_cast<size_t>(n));
        for (int i = 0; i < n; i++)
        {
            lua_State* co = lua_newthread(L);
            lua_pushvalue(L, -1);
            lua_pushboolean(L, 1);
            lua_rawset(L, registered);
            lua_rawseti(L, threads, i + 1);
            lua_rawgeti(L, 1, i + 1);
            lua_xmove(L, co, 1);
            tasks[size_t(i)].co = co;
        }
        schedule(L, tasks, limit);
    }
    for (int i = 1; i <= n; i++)
    {
        lua_rawgeti(L, errors, i);
        if (!lua_isnil(L, -1))
            lua_error(L);
        lua_pop(L, 1);
    }
    lua_pushvalue(L, results);
    return 1;
}

} // namespace

bool ts_parallel_yieldable(lua_State* L)
{
    if (!lua_isyieldable(L))
        return false;
    lua_getfield(L, LUA_REGISTRYINDEX, kThreadsKey);
    lua_pushthread(L);
    lua_rawget(L, -2);
    bool ours = lua_toboolean(L, -1);
    lua_pop(L, 2);
    return ours;
}

int ts_parallel_yield(lua_State* L, uint32_t id)
{
    // The args text is on top of the stack.
    lua_pushlightuserdata(L, &yieldMarker);
    lua_pushinteger(L, int(id));
    lua_pushvalue(L, -3);
    return lua_yield(L, 3);
}

void ts_open_parallel(lua_State* L)
{
    // The coroutines of parallel calls, weakly: an sdk call yields only in
    // one of them, never in a coroutine the script made itself.
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, kThreadsKey);

    lua_pushcfunction(L, parallel, "parallel");
    lua_setglobal(L, "parallel");
}
