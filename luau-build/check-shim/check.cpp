// check.cpp: the exports of the checker module (wasm/check/luau-check.wasm),
// upstream Luau's type checker (Analysis, old solver) as a WASI reactor.
//
// The host (host/runtime/typecheck) writes text into memory it got from
// tc_alloc, loads one definitions file (.d.luau) with tc_load_definitions,
// then checks scripts with tc_check. Both answer in a result buffer
// (tc_result_addr, tc_result_len): tc_load_definitions the diagnostics of
// the definitions, tc_check those of the script, as a JSON array of
// {"line","column","end_line","end_column","code","category","message"}
// (lines and columns 1-based). Nothing here is thread-safe: one instance,
// one thread. A throw traps (the module is built without wasm exceptions),
// which ends the instance: the host reports the check as unchecked.
#include "../shim/json_string.h"
#include "Luau/BuiltinDefinitions.h"
#include "Luau/Common.h"
#include "Luau/ConfigResolver.h"
#include "Luau/Error.h"
#include "Luau/FileResolver.h"
#include "Luau/Frontend.h"
#include "Luau/Type.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <typeinfo>

// Parser flags of Luau 0.720 whose feature the VM (0.745) has on
// unconditionally: the checker accepts the syntax the VM does.
LUAU_FASTFLAG(LuauConst2)
LUAU_FASTFLAG(LuauExternReadWriteAttributes)
LUAU_FASTFLAG(DesugaredArrayTypeReferenceIsEmpty)
LUAU_FASTINT(LuauTarjanChildLimit)

#define TC_EXPORT(name) extern "C" __attribute__((export_name(#name), visibility("default")))

namespace
{

const char* const kScriptName = "script";

struct ScriptResolver : Luau::FileResolver
{
    std::string source;

    std::optional<Luau::SourceCode> readSource(const Luau::ModuleName& name) override
    {
        if (name != kScriptName)
            return std::nullopt;
        Luau::SourceCode code;
        code.source = source;
        code.type = Luau::SourceCode::Script;
        return code;
    }
};

// prelude is declared over Luau's builtins: pcall and xpcall answer
// (boolean, ...any). Luau 0.720's old solver types them generically, which
// flags working scripts: a function returning an sdk call's two values
// (data, response) is unified against its own second value.
const char* const kPrelude = R"(
declare function pcall(f: (...any) -> ...any, ...: any): (boolean, ...any)
declare function xpcall(f: (...any) -> ...any, handler: (any) -> ...any, ...: any): (boolean, ...any)
)";

struct Checker
{
    ScriptResolver files;
    Luau::NullConfigResolver config;
    std::unique_ptr<Luau::Frontend> frontend;

    Checker()
    {
        config.defaultConfig.mode = Luau::Mode::Strict;
        Luau::FrontendOptions options;
        options.retainFullTypeGraphs = false;
        frontend = std::make_unique<Luau::Frontend>(Luau::SolverMode::Old, &files, &config, options);
        Luau::registerBuiltinGlobals(*frontend, frontend->globals);
        Luau::unfreeze(frontend->globals.globalTypes);
        frontend->loadDefinitionFile(frontend->globals, frontend->globals.globalScope, kPrelude, "@toolscript/prelude", false, false);
        Luau::freeze(frontend->globals.globalTypes);
    }
};

Checker* checker = nullptr;
std::string result;

// category names the kinds of error the host tells apart; the rest are
// "other" (code() still names them).
const char* category(const Luau::TypeError& err)
{
    if (Luau::get<Luau::SyntaxError>(err))
        return "syntax";
    if (Luau::get<Luau::UnknownProperty>(err))
        return "unknown_property";
    if (Luau::get<Luau::MissingProperties>(err))
        return "missing_properties";
    if (const Luau::TypeMismatch* tm = Luau::get<Luau::TypeMismatch>(err))
    {
        // A value that may be nil where one may not: the script may
        // well have checked it in a way the checker does not follow.
        if (tm->givenType && tm->wantedType && Luau::isOptional(tm->givenType) && !Luau::isOptional(tm->wantedType))
            return "type_mismatch_optional";
        return "type_mismatch";
    }
    if (Luau::get<Luau::CountMismatch>(err))
        return "count_mismatch";
    if (Luau::get<Luau::UnknownSymbol>(err))
        return "unknown_symbol";
    if (Luau::get<Luau::OptionalValueAccess>(err))
        return "optional_value_access";
    if (Luau::get<Luau::CannotExtendTable>(err))
        return "cannot_extend_table";
    if (Luau::get<Luau::CannotCallNonFunction>(err))
        return "cannot_call_non_function";
    if (Luau::get<Luau::FunctionDoesNotTakeSelf>(err) || Luau::get<Luau::FunctionRequiresSelf>(err))
        return "self_call";
    if (Luau::get<Luau::GenericError>(err))
        return "generic";
    return "other";
}

void appendError(std::string& out, const Luau::TypeError& err)
{
    if (out.size() > 1)
        out += ',';
    char buf[160];
    snprintf(
        buf,
        sizeof(buf),
        "{\"line\":%u,\"column\":%u,\"end_line\":%u,\"end_column\":%u,\"code\":%d,\"category\":\"%s\",\"message\":",
        err.location.begin.line + 1,
        err.location.begin.column + 1,
        err.location.end.line + 1,
        err.location.end.column + 1,
        err.code(),
        category(err)
    );
    out += buf;
    appendJSONString(out, Luau::toString(err));
    out += '}';
}

Checker& instance()
{
    if (!checker)
    {
        FFlag::LuauConst2.value = true;
        FFlag::LuauExternReadWriteAttributes.value = true;
        FFlag::DesugaredArrayTypeReferenceIsEmpty.value = true;
        checker = new Checker();
    }
    return *checker;
}

} // namespace

// The module has no wasm exceptions and Debian's wasm32 libc++abi no
// throw: a throw (Luau's internal errors, std::bad_alloc when memory runs
// out) notes what was thrown and traps, which ends the check; the host
// reads the note (tc_thrown) and reports the script unchecked.
namespace
{
char thrown[128];
}

extern "C" void* __cxa_allocate_exception(size_t size) noexcept
{
    return malloc(size); // freed with the instance: a throw ends it
}

extern "C" void __cxa_free_exception(void* ptr) noexcept
{
    free(ptr);
}

extern "C" [[noreturn]] void __cxa_throw(void*, std::type_info* type, void (*)(void*))
{
    snprintf(thrown, sizeof(thrown), "%s", type ? type->name() : "an unknown exception");
    __builtin_trap();
}

// Luau's arenas call mprotect only with the DebugLuauFreezeArena flag,
// which is off; wasi-libc's emulated mman has none.
extern "C" int mprotect(void*, size_t, int)
{
    return 0;
}

// tc_thrown is the mangled type name of what the last throw threw, "" when
// nothing was.
TC_EXPORT(tc_thrown) const char* tc_thrown()
{
    return thrown;
}

TC_EXPORT(tc_alloc) void* tc_alloc(uint32_t size)
{
    return malloc(size);
}

TC_EXPORT(tc_free) void tc_free(void* p)
{
    free(p);
}

TC_EXPORT(tc_result_addr) const char* tc_result_addr()
{
    return result.data();
}

TC_EXPORT(tc_result_len) uint32_t tc_result_len()
{
    return uint32_t(result.size());
}

// tc_load_definitions adds the declarations of a .d.luau text to the
// global scope and freezes it. Returns 1 when they loaded, 0 when not (the
// result holds the reasons). Large definitions (GitHub's API) exceed the
// instantiation child limit: it is lifted while they load.
TC_EXPORT(tc_load_definitions) int tc_load_definitions(const char* text, uint32_t len)
{
    Checker& c = instance();
    Luau::Frontend& fe = *c.frontend;
    int limit = FInt::LuauTarjanChildLimit.value;
    FInt::LuauTarjanChildLimit.value = 0;
    Luau::unfreeze(fe.globals.globalTypes);
    Luau::LoadDefinitionFileResult loaded =
        fe.loadDefinitionFile(fe.globals, fe.globals.globalScope, std::string_view(text, len), "@toolscript", false, false);
    Luau::freeze(fe.globals.globalTypes);
    FInt::LuauTarjanChildLimit.value = limit;

    result = "[";
    for (const Luau::ParseError& e : loaded.parseResult.errors)
        appendError(result, Luau::TypeError(e.getLocation(), Luau::SyntaxError{e.getMessage()}));
    if (loaded.module)
        for (const Luau::TypeError& e : loaded.module->errors)
            appendError(result, e);
    result += "]";
    return loaded.success ? 1 : 0;
}

// tc_check type-checks a script in strict mode against the loaded
// definitions and returns how many diagnostics the result holds.
TC_EXPORT(tc_check) int tc_check(const char* source, uint32_t len)
{
    Checker& c = instance();
    c.files.source.assign(source, len);
    c.frontend->markDirty(kScriptName);
    Luau::CheckResult checked = c.frontend->check(kScriptName);
    result = "[";
    int n = 0;
    for (const Luau::TypeError& e : checked.errors)
    {
        appendError(result, e);
        n++;
    }
    result += "]";
    c.frontend->clear();
    c.files.source.clear();
    return n;
}
