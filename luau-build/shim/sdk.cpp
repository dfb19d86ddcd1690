// sdk.cpp: the sdk table. Its functions are built once, from a manifest the
// host hands over before the Luau state is created (so that every instance
// restored from the image has them), and know nothing of APIs but an id:
// a call converts its arguments to one JSON text, the host checks them and
// makes the request, and hands back one response envelope, which becomes
// `data, response` or an error. Nothing crosses the boundary per field.
#include "shim.h"
#include "toolscript_host.h"

#include "lua.h"
#include "lualib.h"

#include "lstate.h"

#include <string.h>

namespace
{

const char* const kErrorMetaKey = "toolscript.sdk.error";

} // namespace

const char* const ts_sdk_manifest_key = "toolscript.sdk.manifest";

// json.cpp: the n values from stack index first on as a JSON array into
// out (bytes that are not valid UTF-8 kept as they are), or the error
// ts_json_encode would raise.
void ts_json_encode_list(lua_State* L, int first, int n, const char* root, HeapBuffer& out);
// json.cpp: like ts_json_decode, but text that is not JSON is pushed as a
// string, and text nested deeper than json.decode allows pushes nothing and
// returns false.
bool ts_json_decode_or_text(lua_State* L, const char* s, size_t len);

namespace
{

// The envelope the host writes (abi.h, TS_SDK_ENVELOPE_HEADER): seven
// little-endian 32-bit words, then the message, the headers, the body and
// the content (JSON), back to back. The headers are a count, then each
// name and value as a length and its bytes (32-bit little-endian lengths).
struct Envelope
{
    uint32_t fail;     // SDKFailure: 0 ok, 1 argument, 2 upstream, 3 limit
    uint32_t status;   // HTTP status, 0 when none
    uint32_t bodyKind; // 0 none, 1 JSON, 2 text; TS_SDK_BODY_DRY_RUN set by a dry run
    uint32_t messageLen;
    uint32_t headersLen;
    uint32_t bodyLen;
    uint32_t contentLen;
};

static_assert(sizeof(Envelope) == TS_SDK_ENVELOPE_HEADER, "abi.h: TS_SDK_ENVELOPE_HEADER");

enum Fail
{
    kOK = TS_SDK_OK,
    kArgument = TS_SDK_ARGUMENT,
    kUpstream = TS_SDK_UPSTREAM,
    kLimit = TS_SDK_LIMIT,
};

enum BodyKind
{
    kNoBody = TS_SDK_BODY_NONE,
    kJSONBody = TS_SDK_BODY_JSON,
    kTextBody = TS_SDK_BODY_TEXT,
};

int errorToString(lua_State* L)
{
    lua_getfield(L, 1, "message");
    if (!lua_isstring(L, -1))
        lua_pushliteral(L, "sdk error");
    return 1;
}

// Pushes the body: decoded JSON, a string, or nil. A JSON body the host has
// not parsed that does not parse is a string too. A JSON body nested deeper
// than json.decode allows pushes nothing and returns false.
bool pushBody(lua_State* L, uint32_t kind, const char* body, size_t len)
{
    switch (kind)
    {
    case kJSONBody:
        return ts_json_decode_or_text(L, body, len);
    case kTextBody:
        lua_pushlstring(L, body, len);
        return true;
    default:
        lua_pushnil(L);
        return true;
    }
}

// The keys of a response table, interned once (ts_open_sdk): setting them
// by name would hash them on every call.
int statusKey, headersKey;

uint32_t get32(const char* p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

// Pushes the headers table (empty when there are none).
void pushHeaders(lua_State* L, const char* headers, size_t len)
{
    if (len == 0)
    {
        lua_newtable(L);
        return;
    }
    // Each header takes at least its two lengths.
    if (len < 4 || get32(headers) > (len - 4) / 8)
        luaL_error(L, "sdk: malformed headers from the host");
    uint32_t count = get32(headers);
    lua_createtable(L, 0, int(count));
    size_t off = 4;
    for (uint32_t i = 0; i < 2 * count; i++)
    {
        if (len - off < 4 || get32(headers + off) > len - off - 4)
            luaL_error(L, "sdk: malformed headers from the host");
        size_t n = get32(headers + off);
        lua_pushlstring(L, headers + off + 4, n);
        off += 4 + n;
        if (i % 2 == 1)
            lua_rawset(L, -3);
    }
}

// Raises the error of a successful response whose JSON body nests deeper
// than json.decode allows: the upstream sent what no script can read, so it
// is an sdk error table (kind upstream when it escapes) whose message names
// the function, with the status, the headers when the host sent them and
// the body as text.
[[noreturn]] void raiseTooDeep(lua_State* L, const Envelope& e, const char* headers, const char* body)
{
    lua_createtable(L, 0, 4);
    // The function's name as the host's messages give it (sdk.<api>.<name>):
    // the sdk closure's third upvalue.
    lua_pushfstring(L, "%s: the response is nested more than %d levels deep", lua_tostring(L, lua_upvalueindex(3)), TS_JSON_MAX_DEPTH);
    lua_setfield(L, -2, "message");
    lua_pushinteger(L, int(e.status));
    lua_setfield(L, -2, "status");
    lua_pushlstring(L, body, e.bodyLen);
    lua_setfield(L, -2, "body");
    if (e.headersLen != 0)
    {
        pushHeaders(L, headers, e.headersLen);
        lua_setfield(L, -2, "headers");
    }
    lua_getfield(L, LUA_REGISTRYINDEX, kErrorMetaKey);
    lua_setmetatable(L, -2);
    lua_error(L);
}

// Reads the envelope at p (len bytes, in a userdata on the stack that the
// collector frees, whatever is raised) and returns the function's results,
// or raises its error.
int deliver(lua_State* L, const char* p, size_t len, int wanted)
{
    Envelope e;
    if (len < sizeof(e))
        luaL_error(L, "sdk: malformed response from the host");
    memcpy(&e, p, sizeof(e));
    const bool dryRun = (e.bodyKind & TS_SDK_BODY_DRY_RUN) != 0;
    e.bodyKind &= ~uint32_t(TS_SDK_BODY_DRY_RUN);
    const char* message = p + sizeof(e);
    const char* headers = message + e.messageLen;
    const char* body = headers + e.headersLen;
    const char* content = body + e.bodyLen;

    switch (e.fail)
    {
    case kOK:
        // A caller that takes no result, or only the data, gets what it
        // takes (sdkCall, wantedResults).
        if (wanted == 0)
            return 0;
        if (!pushBody(L, e.bodyKind, body, e.bodyLen))
            raiseTooDeep(L, e, headers, body);
        if (wanted == 1)
            return 1;
        lua_createtable(L, 0, dryRun ? 3 : 2);
        lua_rawgeti(L, LUA_REGISTRYINDEX, statusKey);
        lua_pushinteger(L, int(e.status));
        lua_rawset(L, -3);
        lua_rawgeti(L, LUA_REGISTRYINDEX, headersKey);
        pushHeaders(L, headers, e.headersLen);
        lua_rawset(L, -3);
        if (dryRun)
        {
            // The request was not sent: the body was made up from the spec.
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, "dry_run");
        }
        return 2;
    case kUpstream:
    {
        lua_createtable(L, 0, 5);
        lua_pushlstring(L, message, e.messageLen);
        lua_setfield(L, -2, "message");
        // An HTTP failure has a status (0 for a transport failure); an MCP
        // tool's error has content instead.
        if (e.contentLen == 0)
        {
            lua_pushinteger(L, int(e.status));
            lua_setfield(L, -2, "status");
        }
        if (e.bodyKind != kNoBody)
        {
            // A body too deep to decode is kept as its text: the error is
            // the one the upstream gave.
            if (!pushBody(L, e.bodyKind, body, e.bodyLen))
                lua_pushlstring(L, body, e.bodyLen);
            lua_setfield(L, -2, "body");
        }
        if (e.headersLen != 0)
        {
            pushHeaders(L, headers, e.headersLen);
            lua_setfield(L, -2, "headers");
        }
        if (e.contentLen != 0)
        {
            ts_json_decode(L, content, e.contentLen);
            lua_setfield(L, -2, "content");
        }
        lua_getfield(L, LUA_REGISTRYINDEX, kErrorMetaKey);
        lua_setmetatable(L, -2);
        lua_error(L);
    }
    case kLimit:
        lua_pushlstring(L, message, e.messageLen);
        ts_raise_tagged_top(L, TS_LIMIT);
    default:
        luaL_where(L, 1);
        lua_pushlstring(L, message, e.messageLen);
        lua_concat(L, 2);
        lua_error(L);
    }
}

// How many results the caller of an sdk function takes: 0 (a call as a
// statement), 1 (`local pet = sdk.get_pet(...)`, `sdk.get_pet(...).name`)
// or all of them (LUA_MULTRET, also for 2 or more). Luau's VM knows it from
// the call instruction (CallInfo.nresults) and drops the rest anyway; a
// response table and its headers nobody receives are most of what a small
// response costs the guest, and the host need not send the headers.
int wantedResults(lua_State* L)
{
    int n = L->ci->nresults;
    return n == 0 || n == 1 ? n : LUA_MULTRET;
}

// Set in the id given to ts_host_sdk_call when the caller takes at most
// the data: a successful response's envelope then holds no headers
// (abi.h).
const uint32_t kDataOnly = TS_SDK_DATA_ONLY;

// A direct call's buffer, which every call reuses: the shim encodes the
// arguments into it, after a 32-bit word that says how many bytes the
// buffer holds, and the host writes the response envelope over the whole
// of it when the envelope fits (host/runtime/luau/sdk.go, sdkCall), which spares
// it a call back into the guest and the guest an allocation per call. No
// call can start while another one's buffer is in use: nothing runs
// between the host writing the envelope and deliver reading it. A failed
// buffer is replaced, a large one released, so that it does not hold on to
// the script's memory.
HeapBuffer* callBuffer = nullptr;
const size_t kCallBufferSize = 4096;
const size_t kCallBufferKept = 64 << 10;
// Set in the length ts_host_sdk_call returns when the envelope is in the
// call buffer rather than in a userdata on the stack.
const uint32_t kEnvelopeInPlace = TS_SDK_ENVELOPE_IN_PLACE;

HeapBuffer& callText()
{
    if (callBuffer != nullptr && (!callBuffer->ok() || callBuffer->size() > kCallBufferKept))
    {
        delete callBuffer;
        callBuffer = nullptr;
    }
    if (callBuffer == nullptr)
    {
        callBuffer = new HeapBuffer();
        static const char zeros[kCallBufferSize] = {};
        callBuffer->append(zeros, sizeof(zeros)); // its capacity from now on
    }
    callBuffer->clear();
    callBuffer->append("\0\0\0\0", 4);
    return *callBuffer;
}

// Writes the buffer's size into its first word, once the arguments are in.
void sealCallText(HeapBuffer& text)
{
    uint32_t size = uint32_t(text.size() > kCallBufferSize ? text.size() : kCallBufferSize);
    memcpy(const_cast<char*>(text.data()), &size, 4);
}

void callTextUsed()
{
    if (callBuffer != nullptr && callBuffer->size() > kCallBufferKept)
    {
        delete callBuffer;
        callBuffer = nullptr;
    }
}

// An sdk function: upvalue 1 is its id.
int sdkCall(lua_State* L)
{
    // The id and the arguments straight from the closure and the stack
    // slots (what lua_upvalueindex, lua_isnil and lua_gettop read).
    uint32_t id = uint32_t(nvalue(&clvalue(L->ci->func)->c.upvals[0]));
    int n = int(L->top - L->base);
    while (n > 0 && ttisnil(L->base + (n - 1)))
        n--;
    lua_settop(L, n);
    // The arguments as one JSON array; a nil between them is null.
    HeapBuffer& text = callText();
    ts_json_encode_list(L, 1, n, "arguments", text);
    const char* args = text.data() + 4;
    size_t argsLen = text.size() - 4;
    // Inside parallel, the request is yielded to its scheduler, which
    // resumes this call (sdkCallContinue) with the response.
    if (ts_parallel_yieldable(L))
    {
        lua_pushlstring(L, args, argsLen);
        callTextUsed();
        return ts_parallel_yield(L, id);
    }
    // The host makes the call and writes the response envelope into the
    // call buffer, or when it does not fit, into a userdata it allocates
    // on the stack through ts_sdk_buffer.
    sealCallText(text);
    int wanted = wantedResults(L);
    uint32_t len = ts_host_sdk_call(L, wanted == LUA_MULTRET ? id : id | kDataOnly, args, argsLen);
    if (len & kEnvelopeInPlace)
    {
        int results = deliver(L, text.data(), len & ~kEnvelopeInPlace, wanted);
        callTextUsed();
        return results;
    }
    callTextUsed();
    return deliver(L, static_cast<const char*>(lua_touserdata(L, -1)), len, wanted);
}

// Resumes an sdk call made inside parallel: the scheduler passes the
// request's token once its response has completed. The envelope comes into
// a userdata on this coroutine's stack, so that running out of memory for
// it is raised here, inside the function's own pcall, as it is for a call
// made outside parallel.
int sdkCallContinue(lua_State* L, int status)
{
    (void)status;
    uint32_t token = uint32_t(lua_tonumber(L, -1));
    lua_pop(L, 1);
    uint32_t len = ts_host_sdk_take(L, token);
    return deliver(L, static_cast<const char*>(lua_touserdata(L, -1)), len, wantedResults(L));
}

} // namespace

extern "C" TS_EXPORT("ts_sdk_buffer") void* ts_sdk_buffer(lua_State* L, uint32_t len)
{
    // Called by the host inside ts_host_sdk_call: the response's buffer is
    // a userdata on L's stack, counted in the heap and collected however
    // the call ends. Out of memory raises here, through the host call.
    return lua_newuserdata(L, len);
}

bool ts_is_sdk_error(lua_State* L, int idx)
{
    if (!lua_istable(L, idx) || !lua_getmetatable(L, idx))
        return false;
    lua_getfield(L, LUA_REGISTRYINDEX, kErrorMetaKey);
    bool same = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return same;
}

void ts_open_sdk(lua_State* L, const char* manifest, size_t len)
{
    // The error tables' metatable: __tostring gives the message.
    lua_createtable(L, 0, 2);
    lua_pushcfunction(L, errorToString, "tostring");
    lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, "sdk error");
    lua_setfield(L, -2, "__type");
    lua_setreadonly(L, -1, true);
    lua_setfield(L, LUA_REGISTRYINDEX, kErrorMetaKey);

    lua_pushliteral(L, "status");
    statusKey = lua_ref(L, -1);
    lua_pushliteral(L, "headers");
    headersKey = lua_ref(L, -1);
    lua_pop(L, 2);

    lua_newtable(L); // sdk
    int sdk = lua_gettop(L);
    if (len > 0)
    {
        ts_json_decode(L, manifest, len);
        int m = lua_gettop(L);
        // Lint reads the functions' parameters from it.
        lua_pushvalue(L, m);
        lua_setfield(L, LUA_REGISTRYINDEX, ts_sdk_manifest_key);
        lua_getfield(L, m, "apis");
        int apis = lua_gettop(L);
        for (int a = 1; lua_istable(L, apis) && (lua_rawgeti(L, apis, a), !lua_isnil(L, -1)); a++)
        {
            int api = lua_gettop(L);
            lua_getfield(L, api, "name");
            const char* apiName = lua_tostring(L, -1);
            lua_newtable(L);
            int fns = lua_gettop(L);
            lua_getfield(L, api, "functions");
            int list = lua_gettop(L);
            for (int f = 1; lua_istable(L, list) && (lua_rawgeti(L, list, f), !lua_isnil(L, -1)); f++)
            {
                int fn = lua_gettop(L);
                lua_getfield(L, fn, "name");
                const char* name = lua_tostring(L, -1);
                lua_getfield(L, fn, "id");
                lua_Number id = lua_tonumber(L, -1);
                lua_pop(L, 1);
                lua_getfield(L, fn, "flat");
                bool flat = lua_toboolean(L, -1);
                lua_pop(L, 1);
                // Upvalues: the id, the debug name and the name error
                // messages use: sdk.<api>.<name>, as the host's messages
                // name it, also when the script calls it by its flat name.
                // Luau keeps a closure's debug name by pointer: the string
                // is the closure's second upvalue, so it lives as long as
                // the closure (strings never move).
                lua_pushnumber(L, id);
                lua_pushfstring(L, "sdk.%s.%s", apiName, name);
                lua_pushvalue(L, -1);
                lua_pushcclosurek(L, sdkCall, lua_tostring(L, -2), 3, sdkCallContinue);
                lua_pushvalue(L, -1);
                lua_setfield(L, fns, name);
                if (flat)
                    lua_setfield(L, sdk, name);
                else
                    lua_pop(L, 1);
                lua_settop(L, fn - 1);
            }
            lua_settop(L, fns);
            lua_setreadonly(L, fns, true);
            lua_setfield(L, sdk, apiName);
            lua_settop(L, api - 1);
        }
        lua_settop(L, sdk);
    }
    lua_setreadonly(L, sdk, true);
    lua_setglobal(L, "sdk");
}
