// lint.cpp: `toolscript lint` inside the module.
//
// ts_lint parses one script with the real Luau parser, reports every syntax
// error it collected, checks the syntax tree against the sandbox the runtime
// really builds (the globals are read from this instance's live Luau state,
// so the two cannot drift) and for a few certain mistakes, then compiles the
// script with the same options as ts_run. The host writes the source into a
// buffer that stays allocated across calls (ts_lint_input) and reads all the
// diagnostics back as one packed buffer (ts_lint_out): one call per script,
// never one per diagnostic.
//
// Nothing runs, so one instance lints any number of scripts. A compile error
// (a limit such as too many constants) is thrown as a C++ exception, which
// ends in __cxa_throw (toolscript.cpp) and unwinds through the host; the
// diagnostics found before compiling are already in the output buffer, and
// the host discards the instance.
#include "shim.h"
#include "toolscript_host.h"

#include "Luau/Ast.h"
#include "Luau/BytecodeBuilder.h"
#include "Luau/Compiler.h"
#include "Luau/Parser.h"

#include "lua.h"
#include "lualib.h"

#include <string.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace
{

using Luau::AstExpr;
using Luau::AstLocal;
using Luau::AstName;
using Luau::AstStat;
using Luau::Location;

// The rules this file reports. host/lint describes them (severity, help);
// its tests check that the two lists agree.
const char* const kRuleSyntax = "syntax";
const char* const kRuleUnknownGlobal = "unknown_global";
const char* const kRuleReadonlyGlobal = "readonly_global";
const char* const kRuleIODisabled = "io_disabled";
const char* const kRuleUnusedLocal = "unused_local";
const char* const kRuleShadowedLocal = "shadowed_local";
const char* const kRuleUnreachableCode = "unreachable_code";
const char* const kRuleAssignmentCount = "assignment_count";
const char* const kRuleInvalidNolint = "invalid_nolint";
const char* const kRuleSDKUnknownFunction = "sdk_unknown_function";
const char* const kRuleSDKUnknownParameter = "sdk_unknown_parameter";
const char* const kRuleSDKMissingParameter = "sdk_missing_parameter";

const char* const kRules[] = {
    kRuleSyntax,
    kRuleUnknownGlobal,
    kRuleReadonlyGlobal,
    kRuleIODisabled,
    kRuleUnusedLocal,
    kRuleShadowedLocal,
    kRuleUnreachableCode,
    kRuleAssignmentCount,
    kRuleInvalidNolint,
    kRuleSDKUnknownFunction,
    kRuleSDKUnknownParameter,
    kRuleSDKMissingParameter,
};

// One global of the sandbox as the runtime builds it.
struct Global
{
    bool isTable = false;
    bool readonly = false;
    std::unordered_set<std::string> members; // keys of a table that are strings
};

using Globals = std::unordered_map<std::string, Global>;

// What lint knows of one sdk function: its visible parameters (OpenAPI) or
// arguments (MCP), and those a call must give.
struct Signature
{
    std::string qualified; // sdk.api.fn
    bool mcp = false;
    std::vector<std::string> params;
    std::vector<std::string> required;
};

// The sdk as the manifest describes it: functions by API, and the flat ones.
struct SDK
{
    std::unordered_map<std::string, std::unordered_map<std::string, Signature>> apis;
    std::unordered_map<std::string, Signature> flat;
};

// The globals a script sees, read from the instance's live Luau state:
// those ts_init built, and those a script gets when io is enabled (ts_run
// adds io, os with remove, and file to the script's own environment table
// with ts_open_io; lint does the same on a thread of its own).
struct Environments
{
    bool ready = false;
    Globals plain;
    Globals withIO;
    SDK sdk;
};

// Reads the strings of the list field name of the table on top of the stack.
std::vector<std::string> readStrings(lua_State* L, const char* name)
{
    std::vector<std::string> out;
    lua_getfield(L, -1, name);
    for (int i = 1; lua_istable(L, -1); i++)
    {
        lua_rawgeti(L, -1, i);
        if (!lua_isstring(L, -1))
        {
            lua_pop(L, 1);
            break;
        }
        out.push_back(lua_tostring(L, -1));
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return out;
}

// Reads the string field name of the table on top of the stack.
std::string readString(lua_State* L, const char* name)
{
    lua_getfield(L, -1, name);
    std::string out = lua_isstring(L, -1) ? lua_tostring(L, -1) : "";
    lua_pop(L, 1);
    return out;
}

// Pushes item i of the list on top of the stack and returns true when it is
// a table; otherwise pushes nothing.
bool pushItem(lua_State* L, int i)
{
    if (!lua_istable(L, -1))
        return false;
    lua_rawgeti(L, -1, i);
    if (lua_istable(L, -1))
        return true;
    lua_pop(L, 1);
    return false;
}

// Reads the sdk manifest ts_open_sdk kept in the registry.
void readSDK(lua_State* L, SDK& sdk)
{
    lua_getfield(L, LUA_REGISTRYINDEX, ts_sdk_manifest_key);
    if (!lua_istable(L, -1))
    {
        lua_pop(L, 1);
        return;
    }
    lua_getfield(L, -1, "apis");
    for (int a = 1; pushItem(L, a); a++)
    {
        std::string api = readString(L, "name");
        lua_getfield(L, -1, "functions");
        for (int f = 1; pushItem(L, f); f++)
        {
            Signature sig;
            std::string name = readString(L, "name");
            sig.mcp = readString(L, "kind") == "mcp";
            lua_getfield(L, -1, "flat");
            bool flat = lua_toboolean(L, -1);
            lua_pop(L, 1);
            sig.qualified = "sdk." + api + "." + name;
            sig.params = readStrings(L, "params");
            sig.required = readStrings(L, "required");
            if (flat)
                sdk.flat[name] = sig;
            sdk.apis[api][name] = std::move(sig);
            lua_pop(L, 1); // the function
        }
        lua_pop(L, 2); // functions, the API
    }
    lua_pop(L, 2); // apis, the manifest
}

// Whether the value on top of the stack is one of io.cpp's stand-ins for
// functions the sandbox does not offer (io.popen, io.read, ...): a C
// closure whose one upvalue is its qualified name, which raises "is not
// available" when called. A script that uses one fails at run time, so for
// lint it does not exist.
bool isStandIn(lua_State* L, const std::string& qualified)
{
    if (!lua_iscfunction(L, -1) || lua_getupvalue(L, -1, 1) == nullptr)
        return false;
    bool named = lua_type(L, -1) == LUA_TSTRING && qualified == lua_tostring(L, -1);
    lua_pop(L, 1);
    if (!named || lua_getupvalue(L, -1, 2) != nullptr)
    {
        if (named)
            lua_pop(L, 1);
        return false;
    }
    return true;
}

// Reads the string keys of the table at idx (its own keys: lua_next does
// not follow __index) into globals, replacing entries of the same name.
void readTable(lua_State* L, int idx, Globals& globals)
{
    lua_pushnil(L);
    while (lua_next(L, idx) != 0)
    {
        if (lua_type(L, -2) == LUA_TSTRING)
        {
            std::string name = lua_tostring(L, -2);
            Global g;
            if (lua_istable(L, -1))
            {
                g.isTable = true;
                g.readonly = lua_getreadonly(L, -1) != 0;
                lua_pushnil(L);
                while (lua_next(L, -2) != 0)
                {
                    if (lua_type(L, -2) == LUA_TSTRING)
                    {
                        std::string member = lua_tostring(L, -2);
                        if (!isStandIn(L, name + "." + member))
                            g.members.insert(member);
                    }
                    lua_pop(L, 1);
                }
            }
            globals[name] = std::move(g);
        }
        lua_pop(L, 1);
    }
}

int openIO(lua_State* L)
{
    ts_open_io(L);
    return 0;
}

// Reads both environments into the Environments passed as a light
// userdata. Runs under lua_pcall: pushing values may raise.
int readEnvironments(lua_State* L)
{
    Environments* envs = static_cast<Environments*>(lua_touserdata(L, 1));
    lua_settop(L, 0);

    // ts_init has sandboxed the state: the read-only flags are the ones a
    // script meets.
    readTable(L, LUA_GLOBALSINDEX, envs->plain);

    envs->withIO = envs->plain;
    lua_State* T = lua_newthread(L); // stays on L's stack until this returns
    luaL_sandboxthread(T);
    lua_pushcfunction(T, openIO, "openIO");
    if (lua_pcall(T, 0, 0, 0) != 0)
    {
        lua_xmove(T, L, 1);
        lua_error(L);
    }
    readTable(T, LUA_GLOBALSINDEX, envs->withIO);
    readSDK(L, envs->sdk);
    return 0;
}

// The output of ts_lint, read by the host at the address ts_lint_out returns.
// Layout (little-endian 32-bit): ptr, len of the packed diagnostics.
struct LintOut
{
    uint32_t ptr;
    uint32_t len;
};
static_assert(sizeof(LintOut) == TS_LINT_OUT_SIZE, "abi.h: TS_LINT_OUT_SIZE");

struct Diagnostic
{
    Location location;
    const char* rule;
    std::string message;
};

struct LintState
{
    Environments environments;
    std::vector<char> input;
    std::string packed;
    LintOut out;
};

LintState lint;

const Environments& environments()
{
    Environments& envs = lint.environments;
    if (envs.ready)
        return envs;
    lua_State* L = ts_state();
    lua_pushcfunction(L, readEnvironments, "lintEnvironments");
    lua_pushlightuserdata(L, &envs);
    if (lua_pcall(L, 1, 0, 0) != 0)
        lua_pop(L, 1); // out of memory: lint with what was read
    envs.ready = true;
    return envs;
}

std::string quote(std::string_view s)
{
    std::string q = "'";
    q.append(s);
    q += "'";
    return q;
}

// Edit distance (insertions, deletions, substitutions, transpositions),
// bounded: returns limit + 1 once it is certain to exceed limit.
size_t editDistance(std::string_view a, std::string_view b, size_t limit)
{
    if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > limit)
        return limit + 1;
    std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); j++)
        prev[j] = j;
    for (size_t i = 1; i <= a.size(); i++)
    {
        cur[0] = i;
        size_t best = cur[0];
        for (size_t j = 1; j <= b.size(); j++)
        {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                cur[j] = std::min(cur[j], prev2[j - 2] + 1);
            best = std::min(best, cur[j]);
        }
        if (best > limit)
            return limit + 1;
        prev2.swap(prev);
        prev.swap(cur);
    }
    return prev[b.size()];
}

// The closest of candidates to name, or "" when none is close enough to be
// a likely misspelling.
template<typename Names>
std::string suggest(std::string_view name, const Names& candidates)
{
    size_t limit = name.size() <= 4 ? 1 : 2;
    std::string best;
    size_t bestDistance = limit + 1;
    for (const auto& candidate : candidates)
    {
        std::string_view c = candidate;
        size_t d = editDistance(name, c, limit);
        if (d < bestDistance || (d == bestDistance && d <= limit && c < std::string_view(best)))
        {
            best = std::string(c);
            bestDistance = d;
        }
    }
    return bestDistance <= limit ? best : std::string();
}

// Globals the script assigns anywhere (`x = 1`, `function f() end`): they
// are the script's own, never unknown.
struct AssignedGlobals : Luau::AstVisitor
{
    std::unordered_set<AstName> names;

    void target(AstExpr* expr)
    {
        if (auto g = expr->as<Luau::AstExprGlobal>())
            names.insert(g->name);
    }

    bool visit(Luau::AstStatAssign* node) override
    {
        for (AstExpr* var : node->vars)
            target(var);
        return true;
    }

    bool visit(Luau::AstStatFunction* node) override
    {
        target(node->name);
        return true;
    }
};

// Finds a break that leaves the loop whose body it visits: breaks inside
// nested loops and functions belong to those.
struct BreakFinder : Luau::AstVisitor
{
    bool found = false;

    bool visit(Luau::AstStatBreak*) override
    {
        found = true;
        return false;
    }
    bool visit(Luau::AstStatWhile*) override
    {
        return false;
    }
    bool visit(Luau::AstStatRepeat*) override
    {
        return false;
    }
    bool visit(Luau::AstStatFor*) override
    {
        return false;
    }
    bool visit(Luau::AstStatForIn*) override
    {
        return false;
    }
    bool visit(Luau::AstExprFunction*) override
    {
        return false;
    }
    bool visit(AstExpr*) override
    {
        return !found;
    }
    bool visit(AstStat*) override
    {
        return !found;
    }
};

bool hasBreak(Luau::AstStatBlock* body)
{
    BreakFinder finder;
    body->visit(&finder);
    return finder.found;
}

bool isConstant(AstExpr* expr, bool value)
{
    auto b = expr->as<Luau::AstExprConstantBool>();
    return b && b->value == value;
}

// How control leaves a statement.
enum class Flow
{
    Normal,   // may continue with the next statement
    Return,   // return
    Error,    // error(...)
    Break,    // break
    Continue, // continue
    Branches, // an if whose branches all leave
    Forever,  // a loop that never ends
};

const char* afterWhat(Flow flow)
{
    switch (flow)
    {
    case Flow::Return:
        return "after return";
    case Flow::Error:
        return "after a call to error()";
    case Flow::Break:
        return "after break";
    case Flow::Continue:
        return "after continue";
    case Flow::Branches:
        return "after an if statement whose branches all leave the block";
    case Flow::Forever:
        return "after a loop that never ends";
    default:
        return "";
    }
}

struct Checker : Luau::AstVisitor
{
    const Environments& envs;
    // The globals of the configuration's environment, and those of the
    // environment with io (which tell "io is disabled" from "unknown").
    const Globals& env;
    const Globals& withIO;
    bool io;
    AssignedGlobals assigned;
    std::vector<Diagnostic>& out;

    // Every local the checks track, in declaration order, and how often it is read.
    struct LocalUse
    {
        AstLocal* local;
        const char* what; // "local", "local function", "loop variable"
        size_t reads = 0;
    };
    std::vector<LocalUse> locals;
    std::unordered_map<AstLocal*, size_t> localIndex;

    Checker(const Environments& envs, bool io, std::vector<Diagnostic>& out)
        : envs(envs)
        , env(io ? envs.withIO : envs.plain)
        , withIO(envs.withIO)
        , io(io)
        , out(out)
    {
    }

    void report(const Location& location, const char* rule, std::string message)
    {
        out.push_back(Diagnostic{location, rule, std::move(message)});
    }

    // The sandbox global named name, unless the script assigns that name
    // itself (then nothing is certain about it).
    const Global* builtin(AstName name) const
    {
        if (assigned.names.count(name))
            return nullptr;
        auto it = env.find(name.value);
        return it == env.end() ? nullptr : &it->second;
    }

    // A read-only library table: the global named by expr, if it is one.
    const Global* readonlyTable(AstExpr* expr, AstName* name) const
    {
        auto g = expr->as<Luau::AstExprGlobal>();
        if (!g)
            return nullptr;
        const Global* global = builtin(g->name);
        if (!global || !global->isTable || !global->readonly)
            return nullptr;
        *name = g->name;
        return global;
    }

    // ---- globals

    void checkGlobalRead(Luau::AstExprGlobal* node)
    {
        std::string_view name = node->name.value;
        if (assigned.names.count(node->name) || env.count(std::string(name)))
            return;
        if (!io && withIO.count(std::string(name)))
        {
            report(node->location, kRuleIODisabled, quote(name) + " is not available: io is disabled by the configuration");
            return;
        }
        std::string message = "unknown global " + quote(name) + ": it does not exist in the toolscript sandbox";
        std::vector<std::string_view> candidates;
        for (const auto& [n, g] : env)
            candidates.push_back(n);
        for (AstName a : assigned.names)
            candidates.push_back(a.value);
        std::string hint = suggest(name, candidates);
        if (!hint.empty())
            message += "; did you mean " + quote(hint) + "?";
        report(node->location, kRuleUnknownGlobal, message);
    }

    // table.member, read: the member must exist in a library table. The
    // sdk's functions are checked where they are called (checkSDKCall).
    void checkMemberRead(AstExpr* base, std::string_view member, const Location& location)
    {
        auto g = base->as<Luau::AstExprGlobal>();
        if (!g || g->name == "sdk")
            return;
        const Global* global = builtin(g->name);
        if (!global || !global->isTable || global->members.count(std::string(member)))
            return;
        std::string full = std::string(g->name.value) + "." + std::string(member);
        auto gated = withIO.find(g->name.value);
        if (!io && gated != withIO.end() && gated->second.members.count(std::string(member)))
        {
            report(location, kRuleIODisabled, quote(full) + " is not available: io is disabled by the configuration");
            return;
        }
        std::string message = quote(full) + " does not exist in the toolscript sandbox";
        std::string hint = suggest(member, global->members);
        if (!hint.empty())
            message += "; did you mean " + quote(std::string(g->name.value) + "." + hint) + "?";
        report(location, kRuleUnknownGlobal, message);
    }

    static bool constantKey(AstExpr* index, std::string_view* key)
    {
        auto s = index->as<Luau::AstExprConstantString>();
        if (!s)
            return false;
        *key = std::string_view(s->value.data, s->value.size);
        return true;
    }

    // An assignment target: a local or global is written, not read; a field
    // of a library table cannot be written at all.
    void target(AstExpr* var)
    {
        if (var->is<Luau::AstExprLocal>() || var->is<Luau::AstExprGlobal>())
            return;
        AstExpr* base = nullptr;
        std::string field;
        if (auto index = var->as<Luau::AstExprIndexName>())
        {
            base = index->expr;
            field = std::string(".") + index->index.value;
        }
        else if (auto index = var->as<Luau::AstExprIndexExpr>())
        {
            base = index->expr;
            std::string_view key;
            field = constantKey(index->index, &key) ? "." + std::string(key) : "[...]";
            index->index->visit(this);
        }
        if (!base)
        {
            var->visit(this);
            return;
        }
        AstName name;
        if (readonlyTable(base, &name))
            report(var->location, kRuleReadonlyGlobal,
                quote(name.value) + " is a read-only table in the toolscript sandbox: assigning " + quote(name.value + field) +
                    " fails at run time");
        base->visit(this);
    }

    bool visit(Luau::AstExprGlobal* node) override
    {
        checkGlobalRead(node);
        return false;
    }

    // ---- sdk

    // sdk.fn or sdk.api.fn as written: the names, or false.
    bool sdkName(AstExpr* func, std::string* api, std::string* fn, Location* where) const
    {
        auto outer = func->as<Luau::AstExprIndexName>();
        if (!outer)
            return false;
        *fn = outer->index.value;
        *where = outer->indexLocation;
        if (auto g = outer->expr->as<Luau::AstExprGlobal>())
        {
            api->clear();
            return g->name == "sdk" && !assigned.names.count(g->name);
        }
        auto inner = outer->expr->as<Luau::AstExprIndexName>();
        if (!inner)
            return false;
        auto g = inner->expr->as<Luau::AstExprGlobal>();
        *api = inner->index.value;
        return g && g->name == "sdk" && !assigned.names.count(g->name);
    }

    // A call of an sdk function: the function must exist, and a literal
    // table of parameters (arguments, for an MCP tool) must name only
    // parameters the function has, and every one it requires.
    void checkSDKCall(Luau::AstExprCall* call)
    {
        std::string api, fn;
        Location where;
        if (!sdkName(call->func, &api, &fn, &where))
            return;
        const SDK& sdk = envs.sdk;
        const Signature* sig = nullptr;
        std::vector<std::string_view> candidates;
        std::string written = api.empty() ? "sdk." + fn : "sdk." + api + "." + fn;
        if (api.empty())
        {
            if (sdk.apis.count(fn))
                return; // sdk.api(...): not a function, the runtime says so
            auto it = sdk.flat.find(fn);
            if (it != sdk.flat.end())
                sig = &it->second;
            for (const auto& [name, _] : sdk.flat)
                candidates.push_back(name);
        }
        else
        {
            auto a = sdk.apis.find(api);
            if (a == sdk.apis.end())
            {
                std::vector<std::string_view> apis;
                for (const auto& [name, _] : sdk.apis)
                    apis.push_back(name);
                std::string message = quote("sdk." + api) + " is not a configured API or MCP server";
                std::string hint = suggest(api, apis);
                if (!hint.empty())
                    message += "; did you mean " + quote("sdk." + hint) + "?";
                report(call->func->location, kRuleSDKUnknownFunction, message);
                return;
            }
            auto it = a->second.find(fn);
            if (it != a->second.end())
                sig = &it->second;
            for (const auto& [name, _] : a->second)
                candidates.push_back(name);
        }
        if (!sig)
        {
            std::string message = quote(written) + " is not a function of the sdk";
            std::string hint = suggest(fn, candidates);
            if (!hint.empty())
                message += "; did you mean " + quote(written.substr(0, written.size() - fn.size()) + hint) + "?";
            report(where, kRuleSDKUnknownFunction, message);
            return;
        }
        // An OpenAPI function without parameters takes the body first.
        if (!sig->mcp && sig->params.empty())
            return;
        Luau::AstExprTable* table = call->args.size > 0 ? call->args.data[0]->as<Luau::AstExprTable>() : nullptr;
        if (call->args.size > 0 && !table)
            return; // not a literal: nothing is certain
        std::unordered_set<std::string> given;
        bool onlyNames = true;
        if (table)
        {
            for (const auto& item : table->items)
            {
                std::string_view key;
                if (item.kind == Luau::AstExprTable::Item::Kind::List || !constantKey(item.key, &key))
                {
                    onlyNames = false;
                    continue;
                }
                given.insert(std::string(key));
                if (std::find(sig->params.begin(), sig->params.end(), key) != sig->params.end())
                    continue;
                std::string message = quote(written) + " has no " + (sig->mcp ? "argument " : "parameter ") + quote(key);
                std::string hint = suggest(key, sig->params);
                if (!hint.empty())
                    message += "; did you mean " + quote(hint) + "?";
                report(item.key->location, kRuleSDKUnknownParameter, message);
            }
        }
        if (!onlyNames)
            return;
        for (const std::string& r : sig->required)
            if (!given.count(r))
                report(call->location, kRuleSDKMissingParameter,
                    quote(written) + " requires the " + (sig->mcp ? "argument " : "parameter ") + quote(r));
    }

    bool visit(Luau::AstExprCall* node) override
    {
        checkSDKCall(node);
        return true;
    }

    bool visit(Luau::AstExprIndexName* node) override
    {
        checkMemberRead(node->expr, node->index.value, node->location);
        return true;
    }

    bool visit(Luau::AstExprIndexExpr* node) override
    {
        std::string_view key;
        if (constantKey(node->index, &key))
            checkMemberRead(node->expr, key, node->location);
        return true;
    }

    bool visit(Luau::AstStatAssign* node) override
    {
        checkCounts(node->location, node->vars.size, node->values, "assignment");
        for (AstExpr* var : node->vars)
            target(var);
        for (AstExpr* value : node->values)
            value->visit(this);
        return false;
    }

    bool visit(Luau::AstStatCompoundAssign* node) override
    {
        AstName name;
        AstExpr* base = nullptr;
        if (auto index = node->var->as<Luau::AstExprIndexName>())
            base = index->expr;
        else if (auto index = node->var->as<Luau::AstExprIndexExpr>())
            base = index->expr;
        if (base && readonlyTable(base, &name))
        {
            target(node->var);
        }
        else
        {
            node->var->visit(this);
        }
        node->value->visit(this);
        return false;
    }

    bool visit(Luau::AstStatFunction* node) override
    {
        target(node->name);
        node->func->visit(this);
        return false;
    }

    // ---- locals

    void declare(AstLocal* local, const char* what, bool trackUse)
    {
        if (local->name.value[0] == '_')
            return;
        if (local->shadow)
            report(local->location, kRuleShadowedLocal,
                std::string(what) + " " + quote(local->name.value) + " shadows the variable of the same name declared at line " +
                    std::to_string(local->shadow->location.begin.line + 1));
        if (trackUse)
        {
            localIndex[local] = locals.size();
            locals.push_back(LocalUse{local, what});
        }
    }

    bool visit(Luau::AstExprLocal* node) override
    {
        auto it = localIndex.find(node->local);
        if (it != localIndex.end())
            locals[it->second].reads++;
        return false;
    }

    bool visit(Luau::AstStatLocal* node) override
    {
        checkCounts(node->location, node->vars.size, node->values, "local declaration");
        for (AstLocal* var : node->vars)
            declare(var, "local", true);
        return true;
    }

    bool visit(Luau::AstStatLocalFunction* node) override
    {
        declare(node->name, "local function", true);
        return true;
    }

    bool visit(Luau::AstStatFor* node) override
    {
        declare(node->var, "loop variable", true);
        return true;
    }

    bool visit(Luau::AstStatForIn* node) override
    {
        for (AstLocal* var : node->vars)
            declare(var, "loop variable", true);
        return true;
    }

    bool visit(Luau::AstExprFunction* node) override
    {
        // Parameters: only shadowing. An unused parameter is often
        // required by the caller (callbacks, methods).
        for (AstLocal* arg : node->args)
            declare(arg, "parameter", false);
        return true;
    }

    void reportUnused()
    {
        for (const LocalUse& use : locals)
        {
            if (use.reads == 0)
                report(use.local->location, kRuleUnusedLocal,
                    use.what + std::string(" ") + quote(use.local->name.value) + " is never used; remove it or prefix its name with '_'");
        }
    }

    // ---- assignment counts

    void checkCounts(const Location& location, size_t vars, const Luau::AstArray<AstExpr*>& values, const char* what)
    {
        if (values.size == 0)
            return;
        AstExpr* last = values.data[values.size - 1];
        if (vars > values.size)
        {
            if (last->is<Luau::AstExprCall>() || last->is<Luau::AstExprVarargs>())
                return;
            bool allNil = true;
            for (AstExpr* v : values)
                allNil = allNil && v->is<Luau::AstExprConstantNil>();
            if (allNil)
                return;
            size_t missing = vars - values.size;
            report(location, kRuleAssignmentCount,
                std::string(what) + " has " + std::to_string(vars) + " variables but " + std::to_string(values.size) +
                    (values.size == 1 ? " value" : " values") + ": the last " +
                    (missing == 1 ? std::string("variable is") : std::to_string(missing) + " variables are") + " always nil");
        }
        else if (values.size > vars)
        {
            size_t extra = values.size - vars;
            report(location, kRuleAssignmentCount,
                std::string(what) + " has " + std::to_string(vars) + (vars == 1 ? " variable" : " variables") + " but " +
                    std::to_string(values.size) + " values: the last " +
                    (extra == 1 ? std::string("value is") : std::to_string(extra) + " values are") + " evaluated and discarded");
        }
    }

    // ---- unreachable code

    bool callsError(AstStat* stat) const
    {
        auto e = stat->as<Luau::AstStatExpr>();
        if (!e)
            return false;
        auto call = e->expr->as<Luau::AstExprCall>();
        if (!call)
            return false;
        auto g = call->func->as<Luau::AstExprGlobal>();
        return g && strcmp(g->name.value, "error") == 0 && builtin(g->name) != nullptr;
    }

    Flow flow(AstStat* stat) const
    {
        if (stat->is<Luau::AstStatReturn>())
            return Flow::Return;
        if (stat->is<Luau::AstStatBreak>())
            return Flow::Break;
        if (stat->is<Luau::AstStatContinue>())
            return Flow::Continue;
        if (callsError(stat))
            return Flow::Error;
        if (auto block = stat->as<Luau::AstStatBlock>())
        {
            for (AstStat* s : block->body)
            {
                Flow f = flow(s);
                if (f != Flow::Normal)
                    return f;
            }
            return Flow::Normal;
        }
        if (auto s = stat->as<Luau::AstStatIf>())
        {
            if (!s->elsebody)
                return Flow::Normal;
            Flow a = flow(s->thenbody);
            Flow b = flow(s->elsebody);
            if (a == Flow::Normal || b == Flow::Normal)
                return Flow::Normal;
            return a == b ? a : Flow::Branches;
        }
        if (auto s = stat->as<Luau::AstStatWhile>())
        {
            if (isConstant(s->condition, true) && !hasBreak(s->body))
                return Flow::Forever;
            return Flow::Normal;
        }
        if (auto s = stat->as<Luau::AstStatRepeat>())
        {
            // The body runs at least once; break and continue stay inside
            // the loop, return and error leave it.
            Flow f = flow(s->body);
            if (f == Flow::Return || f == Flow::Error)
                return f;
            if (isConstant(s->condition, false) && !hasBreak(s->body))
                return Flow::Forever;
            return Flow::Normal;
        }
        return Flow::Normal;
    }

    bool visit(Luau::AstStatBlock* node) override
    {
        for (size_t i = 0; i + 1 < node->body.size; i++)
        {
            Flow f = flow(node->body.data[i]);
            if (f != Flow::Normal)
            {
                Location where(node->body.data[i + 1]->location.begin, node->body.data[node->body.size - 1]->location.end);
                report(where, kRuleUnreachableCode, std::string("unreachable code ") + afterWhat(f));
                break;
            }
        }
        return true;
    }
};

bool knownRule(std::string_view name)
{
    for (const char* rule : kRules)
        if (name == rule)
            return true;
    return false;
}

// --!nolint: in the header (before any code) it disables the named rules,
// or all of them, for the whole file; after code, for its own line only.
// Syntax errors are never disabled.
// The records of lint --effects (TS_FLAG_EFFECTS): not rules, never
// disabled by --!nolint. The host reads them from the diagnostics' output.
const char* const kEffectsSDK = "effects_sdk";         // message: the function's qualified name
const char* const kEffectsIO = "effects_io";           // message: the io function and, for io.open, its mode
const char* const kEffectsUnnamed = "effects_unnamed"; // message: what the script wrote

// Finds what a script can change: the sdk functions it names (called or
// not: a function taken as a value can be called), the io functions that
// write it calls, and the places it reaches the sdk or io in a way that
// names nothing (sdk[name], the sdk table or an API table as a value,
// io.open with a mode that is not a literal). Only the names as written
// count; a script that assigns the global sdk, io or os is its own.
struct EffectsFinder : Luau::AstVisitor
{
    const SDK& sdk;
    const std::unordered_set<AstName>& assigned;
    std::vector<Diagnostic>& out;

    EffectsFinder(const SDK& sdk, const std::unordered_set<AstName>& assigned, std::vector<Diagnostic>& out)
        : sdk(sdk)
        , assigned(assigned)
        , out(out)
    {
    }

    bool isGlobal(AstExpr* expr, const char* name) const
    {
        auto g = expr->as<Luau::AstExprGlobal>();
        return g && g->name == name && !assigned.count(g->name);
    }

    // The field an index names: true with the key for x.k and x["k"].
    static bool field(AstExpr* expr, AstExpr** base, std::string* key)
    {
        if (auto n = expr->as<Luau::AstExprIndexName>())
        {
            *base = n->expr;
            *key = n->index.value;
            return true;
        }
        if (auto i = expr->as<Luau::AstExprIndexExpr>())
        {
            *base = i->expr;
            auto s = i->index->as<Luau::AstExprConstantString>();
            if (!s)
                return false;
            *key = std::string(s->value.data, s->value.size);
            return true;
        }
        return false;
    }

    // What was recorded already: each thing once, where first met, so
    // that a script naming one function a million times costs one record.
    std::unordered_set<std::string> seen;

    void record(const Location& location, const char* kind, std::string message)
    {
        if (!seen.insert(std::string(kind) + '\0' + message).second)
            return;
        out.push_back(Diagnostic{location, kind, std::move(message)});
    }

    // An index whose base is sdk or sdk.api: a function it names, an API
    // table taken as a value, or a key it cannot read. Returns false when
    // the index is not about the sdk.
    bool sdkIndex(AstExpr* expr)
    {
        AstExpr* base = nullptr;
        std::string key;
        bool named = field(expr, &base, &key);
        if (!base)
            return false;
        if (isGlobal(base, "sdk"))
        {
            if (!named)
            {
                record(expr->location, kEffectsUnnamed, "sdk[...]");
                return true;
            }
            if (sdk.apis.count(key))
            {
                record(expr->location, kEffectsUnnamed, "sdk." + key + " (the API's table as a value)");
                return true;
            }
            auto it = sdk.flat.find(key);
            if (it != sdk.flat.end())
                record(expr->location, kEffectsSDK, it->second.qualified);
            return true; // an unknown name is sdk_unknown_function's
        }
        AstExpr* root = nullptr;
        std::string api;
        if (!field(base, &root, &api) || !isGlobal(root, "sdk") || !sdk.apis.count(api))
            return false;
        if (!named)
        {
            record(expr->location, kEffectsUnnamed, "sdk." + api + "[...]");
            return true;
        }
        const auto& fns = sdk.apis.at(api);
        auto it = fns.find(key);
        if (it != fns.end())
            record(expr->location, kEffectsSDK, it->second.qualified);
        return true;
    }

    bool visit(Luau::AstExprIndexName* node) override
    {
        if (sdkIndex(node))
            return false;
        ioReference(node);
        return true;
    }

    bool visit(Luau::AstExprIndexExpr* node) override
    {
        if (sdkIndex(node))
        {
            node->index->visit(this);
            return false;
        }
        ioReference(node);
        return true;
    }

    bool visit(Luau::AstExprGlobal* node) override
    {
        // Reached only when sdk is not the base of an index (those stop
        // above): the whole sdk as a value.
        if (node->name == "sdk" && !assigned.count(node->name))
            record(node->location, kEffectsUnnamed, "sdk (the whole sdk as a value)");
        return false;
    }

    // The io function that can write expr names: "io.open", "io.edit",
    // "os.remove", "os.rename", "file.save", or "".
    std::string ioFunction(AstExpr* expr) const
    {
        AstExpr* base = nullptr;
        std::string key;
        if (!field(expr, &base, &key))
            return "";
        for (const char* lib : {"io", "os", "file"})
            if (isGlobal(base, lib))
            {
                std::string name = std::string(lib) + "." + key;
                if (name == "io.open" || name == "io.edit" || name == "os.remove" || name == "os.rename" || name == "file.save")
                    return name;
            }
        return "";
    }

    // io.open, os.remove or file.save taken as a value (pcall(io.open, p,
    // "w")): what it is called with is not known. Calls are handled at the
    // call (visit AstExprCall), which does not visit its function.
    void ioReference(AstExpr* expr)
    {
        std::string fn = ioFunction(expr);
        if (fn == "io.open")
            record(expr->location, kEffectsUnnamed, "io.open as a value (its mode is not known)");
        else if (!fn.empty())
            record(expr->location, kEffectsIO, fn + " (as a value)");
    }

    bool visit(Luau::AstExprCall* node) override
    {
        std::string fn = ioFunction(node->func);
        if (fn.empty())
            return true;
        if (fn == "io.open")
        {
            if (node->args.size < 2)
                return visitArgs(node); // read
            auto mode = node->args.data[1]->as<Luau::AstExprConstantString>();
            if (!mode)
                record(node->location, kEffectsUnnamed, "io.open with a mode that is not a literal");
            else
            {
                std::string m(mode->value.data, mode->value.size);
                if (m != "r" && m != "rb")
                    record(node->location, kEffectsIO, "io.open(..., \"" + m + "\")");
            }
            return visitArgs(node);
        }
        record(node->location, kEffectsIO, fn);
        return visitArgs(node);
    }

    bool visitArgs(Luau::AstExprCall* node)
    {
        for (AstExpr* arg : node->args)
            arg->visit(this);
        return false;
    }
};

struct Nolint
{
    bool fileAll = false;
    std::unordered_set<std::string> fileRules;
    std::unordered_map<unsigned, std::unordered_set<std::string>> lineRules; // an empty set: all rules
    std::vector<Diagnostic> problems;

    void add(const Luau::HotComment& hc)
    {
        const std::string& c = hc.content;
        if (c.compare(0, 6, "nolint") != 0 || (c.size() > 6 && c[6] != ' ' && c[6] != '\t'))
            return;
        std::vector<std::string> names;
        size_t i = 6;
        while (i < c.size())
        {
            while (i < c.size() && (c[i] == ' ' || c[i] == '\t' || c[i] == ','))
                i++;
            size_t start = i;
            while (i < c.size() && c[i] != ' ' && c[i] != '\t' && c[i] != ',')
                i++;
            if (i > start)
                names.push_back(c.substr(start, i - start));
        }
        for (const std::string& name : names)
            if (!knownRule(name) || name == kRuleSyntax)
                problems.push_back(Diagnostic{hc.location, kRuleInvalidNolint,
                    name == kRuleSyntax ? std::string("--!nolint cannot disable syntax errors")
                                        : "--!nolint names an unknown rule " + quote(name)});
        if (hc.header)
        {
            if (names.empty())
                fileAll = true;
            fileRules.insert(names.begin(), names.end());
        }
        else
        {
            auto& rules = lineRules[hc.location.begin.line];
            if (names.empty())
                rules.insert("*");
            rules.insert(names.begin(), names.end());
        }
    }

    bool disabled(const Diagnostic& d) const
    {
        if (strcmp(d.rule, kRuleSyntax) == 0)
            return false;
        if (fileAll || fileRules.count(d.rule))
            return true;
        auto it = lineRules.find(d.location.begin.line);
        return it != lineRules.end() && (it->second.count("*") || it->second.count(d.rule));
    }
};

void put32(std::string& buf, uint32_t v)
{
    char b[4] = {char(v), char(v >> 8), char(v >> 16), char(v >> 24)};
    buf.append(b, 4);
}

// Packs the diagnostics for the host: a 32-bit count, then per diagnostic
// line, column, end line, end column (0-based, columns in bytes), the
// lengths of the rule and of the message, the rule, the message.
void publish(const std::vector<Diagnostic>& diagnostics)
{
    std::string& buf = lint.packed;
    buf.clear();
    put32(buf, uint32_t(diagnostics.size()));
    for (const Diagnostic& d : diagnostics)
    {
        put32(buf, d.location.begin.line);
        put32(buf, d.location.begin.column);
        put32(buf, d.location.end.line);
        put32(buf, d.location.end.column);
        size_t ruleLen = strlen(d.rule);
        put32(buf, uint32_t(ruleLen));
        put32(buf, uint32_t(d.message.size()));
        buf.append(d.rule, ruleLen);
        buf.append(d.message);
    }
    lint.out.ptr = uint32_t(uintptr_t(buf.data()));
    lint.out.len = uint32_t(buf.size());
}

bool before(const Diagnostic& a, const Diagnostic& b)
{
    const Luau::Position& x = a.location.begin;
    const Luau::Position& y = b.location.begin;
    if (x.line != y.line)
        return x.line < y.line;
    return x.column < y.column;
}

} // namespace

extern "C"
{

// Returns a buffer of at least size bytes for the source of the next
// ts_lint. It stays allocated (and at the same address) until a larger one
// is asked for.
TS_EXPORT("ts_lint_input") char* ts_lint_input(uint32_t size)
{
    if (lint.input.size() < size)
        lint.input.resize(size);
    return lint.input.data();
}

TS_EXPORT("ts_lint_out") LintOut* ts_lint_out()
{
    return &lint.out;
}

// Lints the len bytes of source in the ts_lint_input buffer. flags are
// ts_run's (TS_FLAG_*): with TS_FLAG_IO the script is checked for an
// environment with io. The diagnostics are in ts_lint_out; returns their
// count.
TS_EXPORT("ts_lint") uint32_t ts_lint(uint32_t len, uint32_t flags)
{
    lint.out = LintOut{};
    if (lint.input.size() < len || lint.input.empty())
        return 0; // the host always writes the source through ts_lint_input
    const char* source = lint.input.data();
    std::vector<Diagnostic> diagnostics;

    // As in ts_run: bytecode is never loaded, and a chunk that starts like
    // one is refused before parsing.
    if (len > 0 && ((unsigned char)source[0] < 8 || source[0] == '\x1b'))
    {
        diagnostics.push_back(Diagnostic{Location(Luau::Position(0, 0), 1), kRuleSyntax,
            "binary chunks are not accepted; scripts must be Luau source text"});
        publish(diagnostics);
        return 1;
    }

    Luau::Allocator allocator;
    Luau::AstNameTable names(allocator);
    Luau::ParseOptions parseOptions;
    parseOptions.noErrorLimit = true; // report every error, and never throw for the count
    Luau::ParseResult parsed = Luau::Parser::parse(source, len, names, allocator, parseOptions);

    if (!parsed.errors.empty())
    {
        // The tree of a script that does not parse holds error nodes; the
        // other checks would only add noise to the errors that matter.
        for (const Luau::ParseError& e : parsed.errors)
            diagnostics.push_back(Diagnostic{e.getLocation(), kRuleSyntax, e.getMessage()});
        std::stable_sort(diagnostics.begin(), diagnostics.end(), before);
        publish(diagnostics);
        return uint32_t(diagnostics.size());
    }

    bool io = (flags & TS_FLAG_IO) != 0;
    Checker checker(environments(), io, diagnostics);
    parsed.root->visit(&checker.assigned);
    parsed.root->visit(&checker);
    checker.reportUnused();

    Nolint nolint;
    for (const Luau::HotComment& hc : parsed.hotcomments)
        nolint.add(hc);
    diagnostics.erase(std::remove_if(diagnostics.begin(), diagnostics.end(), [&](const Diagnostic& d) { return nolint.disabled(d); }),
        diagnostics.end());
    for (Diagnostic& d : nolint.problems)
        if (!nolint.disabled(d))
            diagnostics.push_back(std::move(d));
    std::stable_sort(diagnostics.begin(), diagnostics.end(), before);
    if ((flags & TS_FLAG_EFFECTS) != 0)
    {
        // After the diagnostics, in source order, whatever --!nolint says.
        std::vector<Diagnostic> effects;
        EffectsFinder finder(environments().sdk, checker.assigned.names, effects);
        parsed.root->visit(&finder);
        std::stable_sort(effects.begin(), effects.end(), before);
        for (Diagnostic& d : effects)
            diagnostics.push_back(std::move(d));
    }
    publish(diagnostics);

    // Compile as ts_run does. A compile error unwinds through the host
    // (see the comment at the top); the diagnostics are already published.
    Luau::BytecodeBuilder builder;
    Luau::CompileOptions options;
    options.optimizationLevel = 1;
    options.debugLevel = 1;
    Luau::compileOrThrow(builder, parsed, names, options);
    return uint32_t(diagnostics.size());
}

} // extern "C"
