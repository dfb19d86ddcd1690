// io.cpp: the sandboxed io library (io.open, io.lines, io.list, io.type,
// io.stat, io.glob, io.grep, io.edit, file handles, os.remove, os.rename,
// the deprecated file.save) over the host's file
// functions (host/runtime/luau/io.go, host/runtime/sandboxio).
//
// The host confines every path to one directory and meters writes; this file
// gives scripts standard Lua 5.1 semantics on top. Reads go through a 64 KiB
// buffer per handle in guest memory, so reading lines costs one host call per
// buffer, not per line; "*a" reads straight into the Luau string buffer, so a
// huge file is stopped by the script's heap limit, never buffered by the host.
#include "shim.h"
#include "toolscript_host.h"

#include "lua.h"
#include "lualib.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <initializer_list>

namespace
{

const int kFileTag = 42;
const size_t kReadBufferSize = 64 * 1024;

struct FileHandle
{
    int32_t id;
    bool closed;
    char* buf; // read buffer, allocated on first read
    uint32_t pos;
    uint32_t len;
};

// Raises the host's pending message for a failed call.
[[noreturn]] void raiseHostError(lua_State* L, int64_t status)
{
    char message[1024];
    int32_t n = ts_host_io_take(message, sizeof(message));
    lua_pushlstring(L, message, n < 0 ? 0 : size_t(n));
    ts_raise_tagged_top(L, status == TS_IO_OVER_LIMIT ? TS_LIMIT : TS_IO);
}

FileHandle* toHandle(lua_State* L, int idx)
{
    return static_cast<FileHandle*>(lua_touserdatatagged(L, idx, kFileTag));
}

FileHandle* checkOpen(lua_State* L, int idx)
{
    FileHandle* h = toHandle(L, idx);
    if (h == nullptr)
        luaL_typeerrorL(L, idx, "file");
    if (h->closed)
        luaL_errorL(L, "attempt to use a closed file");
    return h;
}

void releaseBuffer(FileHandle* h)
{
    free(h->buf);
    h->buf = nullptr;
    h->pos = h->len = 0;
}

void closeHandle(lua_State* L, FileHandle* h)
{
    h->closed = true;
    releaseBuffer(h);
    int32_t status = ts_host_io_close(h->id);
    if (status < 0)
        raiseHostError(L, status);
}

// A file the script dropped without closing is closed when collected.
void destroyHandle(lua_State* L, void* ud)
{
    (void)L;
    FileHandle* h = static_cast<FileHandle*>(ud);
    if (!h->closed)
    {
        h->closed = true;
        ts_host_io_close(h->id);
    }
    releaseBuffer(h);
}

void pushHandle(lua_State* L, int32_t id)
{
    FileHandle* h = static_cast<FileHandle*>(lua_newuserdatatagged(L, sizeof(FileHandle), kFileTag));
    *h = FileHandle{id, false, nullptr, 0, 0};
    lua_getuserdatametatable(L, kFileTag);
    lua_setmetatable(L, -2);
}

// Refills the read buffer; returns false at end of file.
bool fill(lua_State* L, FileHandle* h)
{
    if (h->buf == nullptr)
    {
        h->buf = static_cast<char*>(malloc(kReadBufferSize));
        if (h->buf == nullptr)
            luaL_errorL(L, "not enough memory for a read buffer");
    }
    int32_t n = ts_host_io_read(h->id, h->buf, kReadBufferSize);
    if (n < 0)
        raiseHostError(L, n);
    h->pos = 0;
    h->len = uint32_t(n);
    return n > 0;
}

// Gives back bytes read ahead, so the file position is where the script
// believes it is before a write or a seek.
void sync(lua_State* L, FileHandle* h)
{
    if (h->pos < h->len)
    {
        int64_t pos = ts_host_io_seek(h->id, TS_SEEK_CUR, -int64_t(h->len - h->pos));
        if (pos < 0)
            raiseHostError(L, pos);
    }
    h->pos = h->len = 0;
}

// Pushes the next line (with its newline if keep) or returns false at EOF.
// A line inside the read buffer is pushed straight from it; only a line
// that spans buffer refills is collected in a string buffer.
bool readLine(lua_State* L, FileHandle* h, bool keep)
{
    luaL_Strbuf b;
    bool spanning = false;
    for (;;)
    {
        if (h->pos == h->len && !fill(L, h))
        {
            if (!spanning)
                return false;
            luaL_pushresult(&b);
            return true;
        }
        const char* start = h->buf + h->pos;
        size_t avail = h->len - h->pos;
        const char* nl = static_cast<const char*>(memchr(start, '\n', avail));
        if (nl != nullptr)
        {
            size_t n = size_t(nl - start);
            h->pos += uint32_t(n + 1);
            if (keep)
                n++;
            if (!spanning)
            {
                lua_pushlstring(L, start, n);
                return true;
            }
            luaL_addlstring(&b, start, n);
            luaL_pushresult(&b);
            return true;
        }
        if (!spanning)
        {
            luaL_buffinit(L, &b);
            spanning = true;
        }
        luaL_addlstring(&b, start, avail);
        h->pos = h->len;
    }
}

// Reads the rest of the file. The size left is asked for first so that the
// string is allocated once and read into directly (the heap limit applies to
// that allocation); a file that grows meanwhile is read on in chunks.
void readAll(lua_State* L, FileHandle* h)
{
    sync(L, h);
    int64_t here = ts_host_io_seek(h->id, TS_SEEK_CUR, 0);
    int64_t end = here < 0 ? here : ts_host_io_seek(h->id, TS_SEEK_END, 0);
    if (end >= 0)
        end = ts_host_io_seek(h->id, TS_SEEK_SET, here) < 0 ? -1 : end;
    if (here < 0 || end < 0)
        raiseHostError(L, here < 0 ? here : end);
    size_t chunk = end > here ? size_t(end - here) : kReadBufferSize;
    if (chunk > (1u << 30))
        chunk = 1u << 30;

    // Exactly the size left: luaL_pushresult then takes the buffer as the
    // string without copying it.
    luaL_Strbuf b;
    char* p = luaL_buffinitsize(L, &b, chunk);
    int32_t n = ts_host_io_read(h->id, p, chunk);
    if (n < 0)
        raiseHostError(L, n);
    b.p += n;
    // Whatever the file gained since, through the read buffer.
    while (fill(L, h))
    {
        luaL_addlstring(&b, h->buf, h->len);
        h->pos = h->len = 0;
    }
    luaL_pushresult(&b);
}

bool readBytes(lua_State* L, FileHandle* h, size_t count)
{
    if (count == 0)
    {
        // read(0) tests for end of file
        if (h->pos == h->len && !fill(L, h))
            return false;
        lua_pushliteral(L, "");
        return true;
    }
    luaL_Strbuf b;
    luaL_buffinit(L, &b);
    size_t got = 0;
    while (got < count)
    {
        if (h->pos == h->len && !fill(L, h))
            break;
        size_t n = h->len - h->pos;
        if (n > count - got)
            n = count - got;
        luaL_addlstring(&b, h->buf + h->pos, n);
        h->pos += uint32_t(n);
        got += n;
    }
    luaL_pushresult(&b);
    if (got == 0)
    {
        lua_pop(L, 1);
        return false;
    }
    return true;
}

int peekByte(lua_State* L, FileHandle* h)
{
    if (h->pos == h->len && !fill(L, h))
        return -1;
    return (unsigned char)h->buf[h->pos];
}

// "*n": reads a numeral as Lua 5.2 does (optional sign; decimal or 0x
// hexadecimal digits with an optional fraction and exponent; at most 200
// characters) and pushes its value; returns false when what was read is
// not a number.
struct NumeralReader
{
    lua_State* L;
    FileHandle* h;
    int c = 0;
    size_t n = 0;
    bool overflow = false;
    char text[201];

    int peek() { return peekByte(L, h); }

    void next()
    {
        if (n == sizeof(text) - 1)
            overflow = true;
        else
            text[n++] = char(c);
        h->pos++;
        c = peek();
    }

    bool accept(const char* set)
    {
        if (c < 0 || (c != set[0] && c != set[1]))
            return false;
        next();
        return true;
    }

    int digits(bool hex)
    {
        int count = 0;
        while (c >= 0 && (hex ? isxdigit(c) : isdigit(c)))
        {
            next();
            count++;
        }
        return count;
    }
};

bool readNumber(lua_State* L, FileHandle* h)
{
    NumeralReader r{L, h};
    while ((r.c = r.peek()) >= 0 && isspace(r.c))
        h->pos++;
    r.accept("-+");
    bool hex = false;
    int count = 0;
    if (r.accept("00"))
    {
        if (r.accept("xX"))
            hex = true;
        else
            count = 1;
    }
    count += r.digits(hex);
    if (r.accept(".."))
        count += r.digits(hex);
    if (count > 0 && r.accept(hex ? "pP" : "eE"))
    {
        r.accept("-+");
        r.digits(false);
    }
    r.text[r.n] = '\0';
    if (r.overflow || count == 0)
        return false;
    lua_pushlstring(L, r.text, r.n);
    int isnum = 0;
    double value = lua_tonumberx(L, -1, &isnum);
    lua_pop(L, 1);
    if (!isnum)
        return false;
    lua_pushnumber(L, value);
    return true;
}

int fileRead(lua_State* L)
{
    FileHandle* h = checkOpen(L, 1);
    int nargs = lua_gettop(L) - 1;
    if (nargs == 0)
    {
        if (!readLine(L, h, false))
            lua_pushnil(L);
        return 1;
    }
    luaL_checkstack(L, nargs + LUA_MINSTACK, "too many arguments");
    for (int i = 2; i <= nargs + 1; i++)
    {
        bool ok;
        if (lua_type(L, i) == LUA_TNUMBER)
        {
            double count = lua_tonumber(L, i);
            if (count < 0)
                luaL_argerrorL(L, i, "byte count must not be negative");
            ok = readBytes(L, h, size_t(count));
        }
        else
        {
            const char* fmt = luaL_checkstring(L, i);
            if (*fmt == '*')
                fmt++;
            switch (*fmt)
            {
            case 'a':
                readAll(L, h);
                ok = true;
                break;
            case 'l':
                ok = readLine(L, h, false);
                break;
            case 'L':
                ok = readLine(L, h, true);
                break;
            case 'n':
                ok = readNumber(L, h);
                break;
            default:
                luaL_argerrorL(L, i, "invalid format (use \"*a\", \"*l\", \"*L\", \"*n\" or a byte count)");
            }
        }
        if (!ok)
        {
            lua_pushnil(L);
            return i - 1;
        }
    }
    return nargs;
}

// handle:write(...): the arguments are written as one write, so that one
// that would exceed the budget writes nothing: several are first joined
// (in the Luau heap), one goes as it is.
int fileWrite(lua_State* L)
{
    FileHandle* h = checkOpen(L, 1);
    int n = lua_gettop(L);
    for (int i = 2; i <= n; i++)
        if (lua_type(L, i) != LUA_TSTRING && lua_type(L, i) != LUA_TNUMBER)
            luaL_typeerrorL(L, i, "string or number");
    sync(L, h);
    if (n > 2)
    {
        luaL_Strbuf b;
        luaL_buffinit(L, &b);
        for (int i = 2; i <= n; i++)
        {
            size_t len;
            const char* s = lua_tolstring(L, i, &len);
            luaL_addlstring(&b, s, len);
        }
        luaL_pushresult(&b);
    }
    if (n >= 2)
    {
        size_t len;
        const char* s = lua_tolstring(L, -1, &len);
        int32_t status = ts_host_io_write(h->id, s, len);
        if (status < 0)
            raiseHostError(L, status);
    }
    lua_settop(L, 1);
    return 1;
}

int fileSeek(lua_State* L)
{
    // In the order of TS_SEEK_SET, TS_SEEK_CUR and TS_SEEK_END.
    static const char* const names[] = {"set", "cur", "end", nullptr};
    static_assert(TS_SEEK_SET == 0 && TS_SEEK_CUR == 1 && TS_SEEK_END == 2, "abi.h: whence is the option's index");
    FileHandle* h = checkOpen(L, 1);
    int whence = luaL_checkoption(L, 2, "cur", names);
    double offset = luaL_optnumber(L, 3, 0);
    // NaN, infinities and fractions name no position (NaN used to become 0).
    if (!(offset == floor(offset) && fabs(offset) < 9.2e18))
        luaL_argerror(L, 3, "offset must be an integer");
    sync(L, h);
    int64_t pos = ts_host_io_seek(h->id, whence, int64_t(offset));
    if (pos < 0)
        raiseHostError(L, pos);
    lua_pushnumber(L, double(pos));
    return 1;
}

int fileFlush(lua_State* L)
{
    FileHandle* h = checkOpen(L, 1);
    int32_t status = ts_host_io_flush(h->id);
    if (status < 0)
        raiseHostError(L, status);
    lua_settop(L, 1);
    return 1;
}

int fileClose(lua_State* L)
{
    FileHandle* h = checkOpen(L, 1);
    closeHandle(L, h);
    lua_pushboolean(L, 1);
    return 1;
}

// io.close(file) closes file, as file:close() does. Without a file it
// would close the default output, which the sandbox does not have.
int ioClose(lua_State* L)
{
    if (lua_isnone(L, 1))
        ts_raise_tagged(L, TS_IO, "io.close() without a file closes the default output, which is not available in the toolscript sandbox; use file:close()");
    return fileClose(L);
}

// The iterator of handle:lines() and io.lines(): upvalue 1 is the handle,
// upvalue 2 whether to close it at end of file.
int linesIterator(lua_State* L)
{
    FileHandle* h = toHandle(L, lua_upvalueindex(1));
    if (h->closed)
        luaL_errorL(L, "attempt to use a closed file");
    if (readLine(L, h, false))
        return 1;
    if (lua_toboolean(L, lua_upvalueindex(2)))
        closeHandle(L, h);
    lua_pushnil(L);
    return 1;
}

void pushLines(lua_State* L, int handleIdx, bool closeAtEnd)
{
    lua_pushvalue(L, handleIdx);
    lua_pushboolean(L, closeAtEnd);
    lua_pushcclosure(L, linesIterator, "lines", 2);
}

int fileLines(lua_State* L)
{
    checkOpen(L, 1);
    pushLines(L, 1, false);
    return 1;
}

int fileToString(lua_State* L)
{
    FileHandle* h = toHandle(L, 1);
    if (h->closed)
        lua_pushliteral(L, "file (closed)");
    else
        lua_pushfstringL(L, "file (%p)", lua_topointer(L, 1));
    return 1;
}

// The stand-in for a function the sandbox does not offer. lint.cpp
// (isStandIn) recognises stand-ins by their one upvalue, the qualified name.
// Calling one is a sandbox refusal: kind io.
int notAvailable(lua_State* L)
{
    ts_raise_tagged(L, TS_IO, "%s is not available in the toolscript sandbox", lua_tostring(L, lua_upvalueindex(1)));
}

// At the handle limit, a full collection closes the handles the script can
// no longer reach (destroyHandle), and the open is tried once more: files
// dropped without close do not count against the limit, files still
// reachable (and io.lines loops not yet finished) do.
int open(lua_State* L, const char* path, size_t pathLen, const char* mode, size_t modeLen)
{
    int32_t id = ts_host_io_open(path, pathLen, mode, modeLen);
    if (id == TS_IO_OVER_LIMIT)
    {
        lua_gc(L, LUA_GCCOLLECT, 0);
        id = ts_host_io_open(path, pathLen, mode, modeLen);
    }
    if (id < 0)
        raiseHostError(L, id);
    pushHandle(L, id);
    return 1;
}

int ioOpen(lua_State* L)
{
    size_t pathLen, modeLen;
    const char* path = luaL_checklstring(L, 1, &pathLen);
    const char* mode = luaL_optlstring(L, 2, "r", &modeLen);
    return open(L, path, pathLen, mode, modeLen);
}

int ioLines(lua_State* L)
{
    size_t pathLen;
    const char* path = luaL_checklstring(L, 1, &pathLen);
    open(L, path, pathLen, "r", 1);
    pushLines(L, lua_gettop(L), true);
    return 1;
}

int ioType(lua_State* L)
{
    luaL_checkany(L, 1);
    FileHandle* h = toHandle(L, 1);
    if (h == nullptr)
        lua_pushnil(L);
    else if (h->closed)
        lua_pushliteral(L, "closed file");
    else
        lua_pushliteral(L, "file");
    return 1;
}

// Takes the pending result of a call that returned its length n into a
// buffer the caller frees (nullptr for an empty one).
char* takePending(lua_State* L, int32_t n)
{
    if (n == 0)
        return nullptr;
    char* buf = static_cast<char*>(malloc(size_t(n)));
    if (buf == nullptr)
    {
        ts_host_io_take(nullptr, 0); // drops it
        luaL_errorL(L, "not enough memory for the io result");
    }
    ts_host_io_take(buf, size_t(n));
    return buf;
}

// Pushes a list of the n bytes of NUL-separated names pending.
void pushNames(lua_State* L, int32_t n)
{
    lua_newtable(L);
    char* names = takePending(L, n);
    if (names == nullptr)
        return;
    int index = 1;
    for (int32_t start = 0; start <= n;)
    {
        const char* end = static_cast<const char*>(memchr(names + start, '\0', size_t(n - start)));
        int32_t stop = end ? int32_t(end - names) : n;
        lua_pushlstring(L, names + start, size_t(stop - start));
        lua_rawseti(L, -2, index++);
        start = stop + 1;
    }
    free(names);
}

int ioList(lua_State* L)
{
    size_t len;
    const char* path = luaL_optlstring(L, 1, ".", &len);
    int32_t n = ts_host_io_list(path, len);
    if (n < 0)
        raiseHostError(L, n);
    pushNames(L, n);
    return 1;
}

uint32_t readWord(const char* p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

int64_t readLong(const char* p)
{
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

// io.stat(path): { kind, size, modified }, or nil and a message when
// nothing is there.
int ioStat(lua_State* L)
{
    size_t len;
    const char* path = luaL_checklstring(L, 1, &len);
    int32_t n = ts_host_io_stat(path, len);
    if (n < 0)
        raiseHostError(L, n);
    char* record = takePending(L, n);
    if (record == nullptr)
        luaL_errorL(L, "io.stat: the host returned nothing");
    int kind = record[0];
    if (kind == TS_IO_STAT_MISSING)
    {
        lua_pushnil(L);
        lua_pushlstring(L, record + 1, size_t(n - 1));
        free(record);
        return 2;
    }
    if (n != TS_IO_STAT_RECORD)
    {
        free(record);
        luaL_errorL(L, "io.stat: the host's record is malformed");
    }
    double size = double(readLong(record + 1));
    double modified = double(readLong(record + 9));
    free(record);
    lua_createtable(L, 0, 3);
    switch (kind)
    {
    case TS_IO_STAT_FILE:
        lua_pushliteral(L, "file");
        break;
    case TS_IO_STAT_DIRECTORY:
        lua_pushliteral(L, "directory");
        break;
    case TS_IO_STAT_LINK:
        lua_pushliteral(L, "link");
        break;
    default:
        lua_pushliteral(L, "other");
    }
    lua_setfield(L, -2, "kind");
    lua_pushnumber(L, size);
    lua_setfield(L, -2, "size");
    lua_pushnumber(L, modified);
    lua_setfield(L, -2, "modified");
    return 1;
}

// io.glob(pattern): the matching paths, sorted.
int ioGlob(lua_State* L)
{
    size_t len;
    const char* pattern = luaL_checklstring(L, 1, &len);
    int32_t n = ts_host_io_glob(pattern, len);
    if (n < 0)
        raiseHostError(L, n);
    pushNames(L, n);
    return 1;
}

// io.grep(pattern, path?, options?): { {path, line, text}, ... }; options
// may name a glob that files must match.
int ioGrep(lua_State* L)
{
    size_t patternLen, pathLen, filterLen = 0;
    const char* pattern = luaL_checklstring(L, 1, &patternLen);
    const char* path = luaL_optlstring(L, 2, ".", &pathLen);
    const char* filter = "";
    if (!lua_isnoneornil(L, 3))
    {
        luaL_checktype(L, 3, LUA_TTABLE);
        lua_pushnil(L);
        while (lua_next(L, 3) != 0)
        {
            if (lua_type(L, -2) != LUA_TSTRING)
                luaL_errorL(L, "io.grep: options are named fields (the options are: glob)");
            const char* key = lua_tostring(L, -2);
            if (strcmp(key, "glob") != 0)
                luaL_errorL(L, "io.grep: unknown option '%s' (the options are: glob)", key);
            lua_pop(L, 1);
        }
        lua_getfield(L, 3, "glob");
        if (!lua_isnil(L, -1))
        {
            if (lua_type(L, -1) != LUA_TSTRING)
                luaL_errorL(L, "io.grep: options.glob must be a string");
            filter = lua_tolstring(L, -1, &filterLen);
        }
    }
    int32_t n = ts_host_io_grep(pattern, patternLen, path, pathLen, filter, filterLen);
    if (n < 0)
        raiseHostError(L, n);
    char* matches = takePending(L, n);
    lua_newtable(L);
    int index = 1;
    for (int32_t at = 0; matches != nullptr && at + TS_IO_GREP_HEADER <= n;)
    {
        uint32_t pathSize = readWord(matches + at);
        uint32_t line = readWord(matches + at + 4);
        uint32_t textSize = readWord(matches + at + 8);
        at += TS_IO_GREP_HEADER;
        if (uint64_t(at) + pathSize + textSize > uint64_t(n))
            break;
        lua_createtable(L, 0, 3);
        lua_pushlstring(L, matches + at, pathSize);
        lua_setfield(L, -2, "path");
        lua_pushnumber(L, double(line));
        lua_setfield(L, -2, "line");
        lua_pushlstring(L, matches + at + pathSize, textSize);
        lua_setfield(L, -2, "text");
        lua_rawseti(L, -2, index++);
        at += int32_t(pathSize + textSize);
    }
    free(matches);
    return 1;
}

// io.edit(path, old, new, all?): how many occurrences it replaced.
int ioEdit(lua_State* L)
{
    size_t pathLen, oldLen, newLen;
    const char* path = luaL_checklstring(L, 1, &pathLen);
    const char* old = luaL_checklstring(L, 2, &oldLen);
    const char* replacement = luaL_checklstring(L, 3, &newLen);
    int32_t all = lua_toboolean(L, 4);
    int32_t n = ts_host_io_edit(path, pathLen, old, oldLen, replacement, newLen, all);
    if (n < 0)
        raiseHostError(L, n);
    lua_pushnumber(L, double(n));
    return 1;
}

int osRename(lua_State* L)
{
    size_t fromLen, toLen;
    const char* from = luaL_checklstring(L, 1, &fromLen);
    const char* to = luaL_checklstring(L, 2, &toLen);
    int32_t status = ts_host_io_rename(from, fromLen, to, toLen);
    if (status < 0)
        raiseHostError(L, status);
    lua_pushboolean(L, 1);
    return 1;
}

int osRemove(lua_State* L)
{
    size_t len;
    const char* path = luaL_checklstring(L, 1, &len);
    int32_t status = ts_host_io_remove(path, len);
    if (status < 0)
        raiseHostError(L, status);
    lua_pushboolean(L, 1);
    return 1;
}

// file.save(name, content): the deprecated predecessor of io's writes,
// kept as a wrapper that writes through the same sandbox. Returns name.
int fileSave(lua_State* L)
{
    size_t nameLen, contentLen;
    const char* name = luaL_checklstring(L, 1, &nameLen);
    const char* content = luaL_checklstring(L, 2, &contentLen);
    open(L, name, nameLen, "w", 1);
    FileHandle* h = toHandle(L, -1);
    int32_t status = ts_host_io_write(h->id, content, contentLen);
    if (status < 0)
    {
        closeHandle(L, h);
        raiseHostError(L, status);
    }
    closeHandle(L, h);
    lua_pushvalue(L, 1);
    return 1;
}

int ioMissing(lua_State* L)
{
    const char* key = lua_tostring(L, 2);
    if (key != nullptr && (strcmp(key, "stdin") == 0 || strcmp(key, "stdout") == 0 || strcmp(key, "stderr") == 0))
        ts_raise_tagged(L, TS_IO, "io.%s is not available in the toolscript sandbox: use print() for output", key);
    return 0;
}

void setFunction(lua_State* L, const char* name, lua_CFunction fn)
{
    lua_pushcfunction(L, fn, name);
    lua_setfield(L, -2, name);
}

void setNotAvailable(lua_State* L, const char* field, const char* qualified)
{
    lua_pushstring(L, qualified);
    lua_pushcclosure(L, notAvailable, field, 1);
    lua_setfield(L, -2, field);
}

} // namespace

void ts_open_io(lua_State* L)
{
    // File handles: tagged userdata with a shared metatable.
    lua_createtable(L, 0, 4);
    lua_createtable(L, 0, 8);
    setFunction(L, "read", fileRead);
    setFunction(L, "write", fileWrite);
    setFunction(L, "lines", fileLines);
    setFunction(L, "seek", fileSeek);
    setFunction(L, "flush", fileFlush);
    setFunction(L, "close", fileClose);
    setNotAvailable(L, "setvbuf", "file:setvbuf");
    lua_setreadonly(L, -1, true);
    lua_setfield(L, -2, "__index");
    setFunction(L, "__tostring", fileToString);
    lua_pushliteral(L, "file");
    lua_setfield(L, -2, "__type");
    lua_pushliteral(L, "file");
    lua_setfield(L, -2, "__metatable");
    lua_setreadonly(L, -1, true);
    lua_setuserdatametatable(L, kFileTag);
    lua_setuserdatadtor(L, kFileTag, destroyHandle);

    // io
    lua_createtable(L, 0, 16);
    setFunction(L, "open", ioOpen);
    setFunction(L, "lines", ioLines);
    setFunction(L, "type", ioType);
    setFunction(L, "list", ioList);
    setFunction(L, "stat", ioStat);
    setFunction(L, "glob", ioGlob);
    setFunction(L, "grep", ioGrep);
    setFunction(L, "edit", ioEdit);
    setFunction(L, "close", ioClose);
    const char* const unavailable[] = {"popen", "tmpfile", "input", "output", "read", "write", "flush"};
    for (const char* name : unavailable)
    {
        lua_pushfstringL(L, "io.%s", name);
        lua_pushcclosure(L, notAvailable, name, 1);
        lua_setfield(L, -2, name);
    }
    // io.stdin, io.stdout and io.stderr raise when read.
    lua_createtable(L, 0, 1);
    setFunction(L, "__index", ioMissing);
    lua_setreadonly(L, -1, true);
    lua_setmetatable(L, -2);
    lua_setreadonly(L, -1, true);
    lua_setfield(L, LUA_GLOBALSINDEX, "io");

    // os: the sandbox's os functions plus remove and rename, in the
    // script's environment.
    lua_createtable(L, 0, 6);
    lua_getglobal(L, "os");
    for (const char* name : {"clock", "date", "difftime", "time"})
    {
        lua_getfield(L, -1, name);
        lua_setfield(L, -3, name);
    }
    lua_pop(L, 1);
    setFunction(L, "remove", osRemove);
    setFunction(L, "rename", osRename);
    lua_setreadonly(L, -1, true);
    lua_setfield(L, LUA_GLOBALSINDEX, "os");

    // file.save (deprecated)
    lua_createtable(L, 0, 1);
    setFunction(L, "save", fileSave);
    lua_setreadonly(L, -1, true);
    lua_setfield(L, LUA_GLOBALSINDEX, "file");
}
