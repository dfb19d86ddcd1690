// shim.h: declarations shared by the shim's translation units.
#pragma once

#include "lua.h"
#include "lualib.h"

#include <stddef.h>
#include <stdint.h>

// Kinds of failure reported to the host. The numbers are part of the ABI:
// host/luau/abi.go mirrors them.
enum TsKind
{
    TS_OK = 0,
    TS_SYNTAX = 1,
    TS_RUNTIME = 2,
    TS_MEMORY = 3,
    TS_LIMIT = 4,
    TS_IO = 5,
    TS_INTERNAL = 6,
};

// Flags of ts_run: the optional libraries a script gets.
enum TsFlag
{
    TS_FLAG_IO = 1,
};

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

// Raises a Lua error carrying message and remembers that it is of the given
// kind, so that the host can classify it if it escapes the script.
[[noreturn]] void ts_raise_tagged(lua_State* L, TsKind kind, const char* fmt, ...);

// The instance's Luau state, created by ts_init (null before). Lint reads
// the sandbox's globals from it.
lua_State* ts_state();

// Like ts_raise_tagged, with the message the string on top of the stack
// (which may hold any bytes, NUL included).
[[noreturn]] void ts_raise_tagged_top(lua_State* L, TsKind kind);
