// json.cpp: the json library (encode, decode, null, object) and the Luau to
// JSON conversion used for script results. The rules (docs/result.md):
// integral numbers below 2^53 as integers, NaN and infinities as
// null, invalid UTF-8 replaced by U+FFFD, tables with keys exactly 1..n as
// arrays, every other table as an object with sorted keys, and errors that
// name where in the value the problem was found.
#include "shim.h"

#include "lua.h"
#include "lualib.h"

#include "lgc.h"
#include "lobject.h"
#include "lstate.h"
#include "ltable.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

namespace
{

const char* const kNullKey = "toolscript.json.null";
const char* const kObjectsKey = "toolscript.json.objects";
// How deep a value may nest: what common JSON readers accept (serde_json's
// default, and below Python's recursion limit, which the official MCP
// Python SDK meets when it parses a result).
const int kMaxDepth = TS_JSON_MAX_DEPTH;
// How much of a table key an error's path shows.
const size_t kMaxPathKey = 64;
const double kMaxSafeInteger = 9007199254740992.0; // 2^53

bool isNull(lua_State* L, int idx)
{
    if (lua_type(L, idx) != LUA_TUSERDATA)
        return false;
    lua_getfield(L, LUA_REGISTRYINDEX, kNullKey);
    bool same = lua_rawequal(L, idx, -1);
    lua_pop(L, 1);
    return same;
}

bool isMarkedObject(lua_State* L, int idx)
{
    lua_getfield(L, LUA_REGISTRYINDEX, kObjectsKey);
    lua_pushvalue(L, idx);
    lua_rawget(L, -2);
    bool marked = lua_toboolean(L, -1);
    lua_pop(L, 2);
    return marked;
}

void markObject(lua_State* L, int idx)
{
    idx = lua_absindex(L, idx);
    lua_getfield(L, LUA_REGISTRYINDEX, kObjectsKey);
    lua_pushvalue(L, idx);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

// Writes a number's JSON text into buf (at least 64 bytes) and returns its
// length. Integral values below 2^53 in magnitude are written as integers,
// others in the shortest form that reads back exactly.
size_t formatNumber(char* buf, double d)
{
    const size_t size = 64;
    if (!isfinite(d))
        return size_t(snprintf(buf, size, "null"));
    if (d == floor(d) && fabs(d) < kMaxSafeInteger)
    {
        // The common case, without snprintf: the digits, last first.
        unsigned long long u = d < 0 ? (unsigned long long)(-d) : (unsigned long long)d;
        char digits[20];
        size_t n = 0;
        do
        {
            digits[n++] = char('0' + u % 10);
            u /= 10;
        } while (u != 0);
        size_t len = 0;
        if (d < 0)
            buf[len++] = '-';
        while (n > 0)
            buf[len++] = digits[--n];
        buf[len] = '\0';
        return len;
    }
    // %.17g always round-trips; prefer the shortest precision that does.
    for (int precision = 15; precision <= 17; precision++)
    {
        snprintf(buf, size, "%.*g", precision, d);
        if (strtod(buf, nullptr) == d)
            break;
    }
    size_t len = strlen(buf);
    // An integral value beyond 2^53 is written as a float, so that no reader
    // takes it for an exact integer.
    if (strpbrk(buf, ".e") == nullptr)
    {
        memcpy(buf + len, ".0", 3);
        len += 2;
    }
    return len;
}

// Length of the valid UTF-8 sequence at s (at most n bytes), or 0.
size_t utf8SequenceLength(const unsigned char* s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    else if ((c & 0xE0) == 0xC0)
        len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
        len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
    {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    static const uint32_t minimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < minimum[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

// How a string's bytes that are not valid UTF-8 are written.
enum class InvalidUTF8
{
    // Replaced by U+FFFD, one per byte: the text is JSON (json.encode,
    // results).
    Replace,
    // Written as they are: the sdk's arguments, which only the host reads
    // (host/sdk, decodeArgs), so that a binary string reaches an upload
    // intact.
    Keep,
};

// Appends data as a JSON string. It stops early when out fails (its cap or
// the memory limit), and counts its work (ts_work) by runs.
void appendString(HeapBuffer& out, const char* data, size_t len, InvalidUTF8 invalid)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char* s = reinterpret_cast<const unsigned char*>(data);
    out.push('"');
    size_t i = 0;
    while (i < len && out.ok())
    {
        // A run of bytes that need no escaping is appended at once.
        size_t run = i;
        while (run < len && s[run] >= 0x20 && s[run] < 0x7F && s[run] != '"' && s[run] != '\\')
            run++;
        if (run > i)
        {
            out.append(data + i, run - i);
            ts_work((run - i) / 16 + 1);
            i = run;
            continue;
        }
        unsigned char c = s[i];
        ts_work(1);
        if (c >= 0x80)
        {
            size_t n = utf8SequenceLength(s + i, len - i);
            if (n == 0)
            {
                if (invalid == InvalidUTF8::Keep)
                    out.push(char(c));
                else
                    out.append("\xEF\xBF\xBD", 3);
                i++;
            }
            else
            {
                out.append(data + i, n);
                i += n;
            }
            continue;
        }
        switch (c)
        {
        case '"':
            out.append("\\\"", 2);
            break;
        case '\\':
            out.append("\\\\", 2);
            break;
        case '\n':
            out.append("\\n", 2);
            break;
        case '\r':
            out.append("\\r", 2);
            break;
        case '\t':
            out.append("\\t", 2);
            break;
        case '\b':
            out.append("\\b", 2);
            break;
        case '\f':
            out.append("\\f", 2);
            break;
        default:
        {
            char escaped[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            out.append(escaped, 6);
        }
        }
        i++;
    }
    out.push('"');
}

bool isIdentifier(const char* s, size_t len)
{
    if (len == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (size_t i = 1; i < len; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return false;
    return true;
}

// writeScalar writes v when it is nil, a boolean, a number or a string (its
// bytes as invalid says), and returns false, having written nothing, for any
// other type.
bool writeScalar(HeapBuffer& out, const TValue* v, InvalidUTF8 invalid)
{
    switch (ttype(v))
    {
    case LUA_TNIL:
        out.append("null", 4);
        return true;
    case LUA_TBOOLEAN:
        if (bvalue(v))
            out.append("true", 4);
        else
            out.append("false", 5);
        return true;
    case LUA_TNUMBER:
    {
        char buf[64];
        out.append(buf, formatNumber(buf, nvalue(v)));
        return true;
    }
    case LUA_TSTRING:
        appendString(out, getstr(tsvalue(v)), tsvalue(v)->len, invalid);
        return true;
    default:
        return false;
    }
}

// How many members of a table wait on the stack (or in a frame) while it is
// converted.
const size_t kStackedMembers = 16;

// The usual shape of sdk arguments, and of many a value json.encode
// sees: a table without a metatable whose keys are strings (at most
// kStackedMembers of them) and whose values are strings, numbers or
// booleans. It is written straight from the table's nodes, exactly as
// encodeObject would write it (keys sorted), without lua_next, which
// looks each key up again to find the next one, or the stack. Returns
// false, having written nothing, for any other table.
bool writeFlatObject(const LuaTable* t, HeapBuffer& text, InvalidUTF8 invalid)
{
    if (t->metatable != nullptr)
        return false;
    for (int i = 0; i < t->sizearray; i++)
        if (!ttisnil(&t->array[i]))
            return false;
    struct Member
    {
        const TString* key;
        const TValue* value;
    };
    Member members[kStackedMembers];
    size_t used = 0;
    for (int i = 0; i < sizenode(t); i++)
    {
        const LuaNode* n = gnode(t, i);
        const TValue* v = gval(n);
        if (ttisnil(v))
            continue;
        if (used == kStackedMembers || !ttisstring(gkey(n)) || !(ttisstring(v) || ttisnumber(v) || ttisboolean(v)))
            return false;
        members[used++] = Member{tsvalue(gkey(n)), v};
    }
    if (used == 0)
        return false; // {} or []: encodeTable knows which
    ts_work(1 + size_t(t->sizearray) + sizenode(t) + used * 17);
    if (used > 1)
        std::sort(members, members + used, [](const Member& a, const Member& b) {
            int c = memcmp(getstr(a.key), getstr(b.key), std::min(a.key->len, b.key->len));
            return c != 0 ? c < 0 : a.key->len < b.key->len;
        });
    text.push('{');
    for (size_t i = 0; i < used; i++)
    {
        if (i > 0)
            text.push(',');
        appendString(text, getstr(members[i].key), members[i].key->len, invalid);
        text.push(':');
        writeScalar(text, members[i].value, invalid);
    }
    text.push('}');
    return true;
}

// writeFlatList writes the n values from stack index first on (positive)
// as a JSON array, when each is nil, a boolean, a number, a string or a
// flat object (writeFlatObject): the usual sdk arguments, written without
// an Encoder and its path. Bytes that are not valid UTF-8 are kept. Returns
// false, having written nothing, for any other values, or when out fails;
// the Encoder then writes them, or raises the error.
bool writeFlatList(lua_State* L, int first, int n, HeapBuffer& out)
{
    size_t mark = out.size();
    out.push('[');
    for (int i = 0; i < n; i++)
    {
        if (i > 0)
            out.push(',');
        const TValue* v = L->base + (first - 1 + i);
        ts_work(1);
        if (writeScalar(out, v, InvalidUTF8::Keep) || (ttistable(v) && writeFlatObject(hvalue(v), out, InvalidUTF8::Keep)))
            continue;
        out.truncate(mark);
        return false;
    }
    out.push(']');
    if (!out.ok())
    {
        out.truncate(mark);
        return false;
    }
    return true;
}

// Encoder converts one value. Its text is built in a HeapBuffer outside the
// Luau heap, charged against the heap limit and checked against the cap as
// it grows; the path of the value being converted is kept for error
// messages. Its work is counted (ts_work), so that a large or repetitive
// value (a DAG of shared tables, a huge emptied table referenced many
// times) reaches the host's deadline checks.
class Encoder
{
public:
    Encoder(lua_State* L, const char* root, HeapBuffer& text, InvalidUTF8 invalid = InvalidUTF8::Replace)
        : text(text)
        , L(L)
        , root(root)
        , invalid(invalid)
    {
    }

    // Converts the value at idx, appending to text. On failure returns false
    // with error set, or text.capExceeded / text.memoryExceeded; the caller
    // raises the Lua error once every C++ object is gone, so a pcall that
    // catches it leaks nothing.
    bool encode(int idx)
    {
        idx = lua_absindex(L, idx);
        ts_work(1);
        if (writeScalar(text, L->base + (idx - 1), invalid))
            return text.ok();
        switch (lua_type(L, idx))
        {
        case LUA_TTABLE:
            if (!encodeTable(idx))
                return false;
            break;
        case LUA_TUSERDATA:
            if (isNull(L, idx))
            {
                text.append("null", 4);
                break;
            }
            return fail("cannot convert userdata");
        default:
            return fail(std::string("cannot convert ") + lua_typename(L, lua_type(L, idx)));
        }
        return text.ok();
    }

    // Encodes the n values from stack index first on as a JSON array (nil
    // as null), whose items the path names root[1], root[2]...
    bool encodeList(int first, int n)
    {
        text.push('[');
        frames.push_back(Frame{nullptr, 0, 0, false});
        for (int i = 1; i <= n; i++)
        {
            if (i > 1)
                text.push(',');
            frames.back().index = size_t(i);
            if (!encode(first + i - 1))
                return false;
        }
        frames.pop_back();
        text.push(']');
        return text.ok();
    }

    HeapBuffer& text;
    std::string error;

private:
    // Frame is one step of the path from the root to the value being
    // converted: an array index, or an object key (its bytes anchored in
    // the names table on the Lua stack while the frame lives). The path is
    // spelled out only when a conversion fails.
    struct Frame
    {
        const char* key; // nullptr for an array index
        size_t len;
        size_t index;
        bool stringKey;
    };

    lua_State* L;
    const char* root;
    InvalidUTF8 invalid;
    // The path and the tables on it: one pair of vectors that every
    // encoder reuses (no two are ever active at once: converting runs no
    // Lua code), which spares two allocations per conversion.
    std::vector<Frame>& frames = sharedFrames();
    std::vector<const void*>& ancestors = sharedAncestors();

    static std::vector<Frame>& sharedFrames()
    {
        static std::vector<Frame> frames;
        frames.clear();
        return frames;
    }
    static std::vector<const void*>& sharedAncestors()
    {
        static std::vector<const void*> ancestors;
        ancestors.clear();
        return ancestors;
    }

    bool fail(const std::string& what)
    {
        std::string path = root;
        for (const Frame& f : frames)
        {
            if (f.key == nullptr)
            {
                path += "[" + std::to_string(f.index) + "]";
                continue;
            }
            size_t shown = f.len < kMaxPathKey ? f.len : kMaxPathKey;
            const char* more = f.len > kMaxPathKey ? "..." : "";
            if (f.stringKey && isIdentifier(f.key, f.len))
                path += "." + std::string(f.key, shown) + more;
            else if (f.stringKey)
                path += "[\"" + std::string(f.key, shown) + more + "\"]";
            else
                path += "[" + std::string(f.key, shown) + more + "]";
        }
        error = path + ": " + what;
        return false;
    }

    bool failTooDeep()
    {
        return fail("value is nested too deeply to convert to JSON (more than " + std::to_string(kMaxDepth) + " levels)");
    }

    bool encodeTable(int idx)
    {
        const void* table = lua_topointer(L, idx);
        if (ancestors.size() >= size_t(kMaxDepth))
            return failTooDeep();
        // A flat object holds no table, so it can be on no cycle, and is
        // written without the stack.
        const LuaTable* t = static_cast<const LuaTable*>(table);
        if (writeFlatObject(t, text, invalid))
            return text.ok();
        if (std::find(ancestors.begin(), ancestors.end(), table) != ancestors.end())
            return fail("cannot convert a table that contains itself (cycle)");
        if (!lua_checkstack(L, 8))
            return failTooDeep();
        // Scanning a table costs its capacity, however few entries it holds.
        ts_work(1 + size_t(t->sizearray) + sizenode(t));
        ancestors.push_back(table);

        // Classify: keys exactly 1..n (n >= 1) make an array.
        size_t count = 0;
        double maxKey = 0;
        bool sequence = true;
        lua_pushnil(L);
        while (lua_next(L, idx))
        {
            lua_pop(L, 1);
            count++;
            if (lua_type(L, -1) == LUA_TNUMBER)
            {
                double k = lua_tonumber(L, -1);
                if (k >= 1 && k == floor(k))
                    maxKey = std::max(maxKey, k);
                else
                    sequence = false;
            }
            else
            {
                sequence = false;
            }
        }
        bool ok = true;
        if (count == 0)
            text.append(isMarkedObject(L, idx) ? "{}" : "[]", 2);
        else if (sequence && maxKey == double(count))
            ok = encodeArray(idx, count);
        else
            ok = encodeObject(idx, count);

        ancestors.pop_back();
        return ok && text.ok();
    }

    bool encodeArray(int idx, size_t n)
    {
        text.push('[');
        frames.push_back(Frame{nullptr, 0, 0, false});
        for (size_t i = 1; i <= n; i++)
        {
            if (i > 1)
                text.push(',');
            frames.back().index = i;
            lua_rawgeti(L, idx, int(i));
            if (!encode(-1))
                return false;
            lua_pop(L, 1);
        }
        frames.pop_back();
        text.push(']');
        return true;
    }

    bool encodeObject(int idx, size_t count)
    {
        // The keys as text, sorted. A string key's bytes are the key's own
        // (kept alive and in place by the table, or by the stack); a number
        // key's text is written into numberText. Both count against the
        // heap limit while they live. A small table's keys and values wait
        // on the stack, which spares looking each value up again; a large
        // one's are looked up by key.
        struct Entry
        {
            const char* name;
            size_t len;
            size_t offset; // in numberText, for a number key
            double number;
            int valueSlot; // on the stack, or 0: look it up
            bool stringKey;
        };
        // A small table's entries live in this frame, a large one's on the
        // heap (charged).
        Entry small[kStackedMembers];
        std::vector<Entry> large;
        std::string numberText;
        Release release{0};
        Entry* entries = small;
        size_t used = 0;
        if (count > kStackedMembers)
        {
            release.bytes = count * sizeof(Entry);
            if (!ts_heap_charge(release.bytes))
            {
                release.bytes = 0;
                text.memoryExceeded = true;
                return false;
            }
            large.resize(count);
            entries = large.data();
        }
        bool stacked = count <= kStackedMembers && lua_checkstack(L, int(2 * count) + 4);
        int base = lua_gettop(L);
        // A weak table may lose entries to the collector meanwhile, and with
        // them the only reference to a key: its keys are anchored too.
        int anchors = 0;
        if (!stacked && lua_getmetatable(L, idx))
        {
            lua_rawgetfield(L, -1, "__mode");
            bool weak = !lua_isnil(L, -1);
            lua_pop(L, 2);
            if (weak)
            {
                lua_createtable(L, int(count), 0);
                anchors = lua_gettop(L);
            }
        }

        lua_pushnil(L);
        while (used < count && lua_next(L, idx))
        {
            if (!stacked)
                lua_pop(L, 1);
            int key = stacked ? lua_gettop(L) - 1 : lua_gettop(L);
            int valueSlot = stacked ? key + 1 : 0;
            if (lua_type(L, key) == LUA_TSTRING)
            {
                Entry e{nullptr, 0, 0, 0, valueSlot, true};
                e.name = lua_tolstring(L, key, &e.len);
                entries[used++] = e;
                if (anchors != 0)
                {
                    lua_pushvalue(L, key);
                    lua_rawseti(L, anchors, int(used));
                }
            }
            else if (lua_type(L, key) == LUA_TNUMBER)
            {
                double k = lua_tonumber(L, key);
                if (!isfinite(k))
                    return fail("cannot convert a table with a NaN or infinite key");
                char buf[64];
                size_t len = formatNumber(buf, k);
                entries[used++] = Entry{nullptr, len, numberText.size(), k, valueSlot, false};
                size_t before = numberText.capacity();
                numberText.append(buf, len);
                size_t grown = numberText.capacity() - before;
                if (grown > 0 && !ts_heap_charge(grown))
                {
                    text.memoryExceeded = true;
                    return false;
                }
                release.bytes += grown;
            }
            else
            {
                return fail(std::string("cannot convert a table key of type ") + luaL_typename(L, key));
            }
            if (stacked)
                lua_pushvalue(L, key); // where lua_next goes on from
        }
        if (used == count && stacked)
            lua_pop(L, 1); // the key lua_next would have gone on from
        for (size_t i = 0; i < used; i++)
            if (!entries[i].stringKey)
                entries[i].name = numberText.data() + entries[i].offset;

        ts_work(used * 16);
        std::sort(entries, entries + used, [](const Entry& a, const Entry& b) {
            int c = memcmp(a.name, b.name, std::min(a.len, b.len));
            return c != 0 ? c < 0 : a.len < b.len;
        });
        for (size_t i = 1; i < used; i++)
            if (entries[i].len == entries[i - 1].len && memcmp(entries[i].name, entries[i - 1].name, entries[i].len) == 0)
            {
                std::string key(entries[i].name, std::min(entries[i].len, kMaxPathKey));
                return fail("cannot convert a table with both a number and a string key '" + key + "'");
            }

        text.push('{');
        frames.push_back(Frame{});
        for (size_t i = 0; i < used; i++)
        {
            const Entry& e = entries[i];
            if (i > 0)
                text.push(',');
            appendString(text, e.name, e.len, invalid);
            text.push(':');
            frames.back() = Frame{e.name, e.len, 0, e.stringKey};
            if (e.valueSlot != 0)
            {
                if (!encode(e.valueSlot))
                    return false;
                continue;
            }
            if (e.stringKey)
                lua_pushlstring(L, e.name, e.len); // the key itself: interned, so found, not made
            else
                lua_pushnumber(L, e.number);
            lua_rawget(L, idx);
            if (!encode(-1))
                return false;
            lua_pop(L, 1);
        }
        frames.pop_back();
        text.push('}');
        lua_settop(L, base);
        return true;
    }

    // Release gives back what an encodeObject charged, however it returns.
    struct Release
    {
        size_t bytes;
        ~Release()
        {
            ts_heap_release(bytes);
        }
    };
};

// Decoder parses strict JSON (RFC 8259) into Luau values. Like the encoder it
// reports failure by returning false; jsonDecode raises the error afterwards.
class Decoder
{
public:
    Decoder(lua_State* L, const char* s, size_t len)
        : L(L)
        , s(s)
        , end(s + len)
        , p(s)
    {
    }

    bool decodeDocument()
    {
        skipSpace();
        if (!value(0))
            return false;
        skipSpace();
        if (p != end)
            return fail("unexpected trailing characters");
        return true;
    }

    std::string error;
    bool memoryExceeded = false;
    bool tooDeep = false;

private:
    lua_State* L;
    const char* s;
    const char* end;
    const char* p;
    HeapBuffer buffer;

    // outOfMemory fails the decoding with memoryExceeded set: its buffer
    // went past the script's memory limit.
    bool outOfMemory()
    {
        memoryExceeded = true;
        return false;
    }

    bool fail(const char* what)
    {
        char where[64];
        if (p >= end)
            snprintf(where, sizeof(where), " at end of input (position %d)", int(p - s) + 1);
        else
            snprintf(where, sizeof(where), " at position %d", int(p - s) + 1);
        error = std::string("json.decode: ") + what + where;
        return false;
    }

    void skipSpace()
    {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
            p++;
    }

    bool literal(const char* word)
    {
        size_t n = strlen(word);
        if (size_t(end - p) < n || memcmp(p, word, n) != 0)
            return fail("invalid literal");
        p += n;
        return true;
    }

    bool value(int depth)
    {
        ts_work(1);
        // Each value pushes one slot; a container's members wait on the
        // stack (kPending pairs at most, then one pair at a time), so room
        // is made once per container (room) rather than per value.
        // depth counts the containers around this value: at most
        // kMaxDepth levels, as the encoder allows.
        if (depth >= kMaxDepth || !room())
        {
            tooDeep = true;
            return fail("nesting too deep (more than 128 levels)");
        }
        if (p >= end)
            return fail("unexpected end of input");
        switch (*p)
        {
        case '{':
            return object(depth);
        case '[':
            return array(depth);
        case '"':
            return string();
        case 't':
            lua_pushboolean(L, 1);
            return literal("true");
        case 'f':
            lua_pushboolean(L, 0);
            return literal("false");
        case 'n':
            lua_getfield(L, LUA_REGISTRYINDEX, kNullKey);
            return literal("null");
        default:
            if (*p == '-' || (*p >= '0' && *p <= '9'))
                return number();
            return fail("unexpected character");
        }
    }

    // room makes sure the stack has space for what a value and its
    // container push: a container's kPending pairs, its table and a spare.
    int roomLeft = 0;
    bool room()
    {
        if (roomLeft > 0)
        {
            roomLeft--;
            return true;
        }
        if (!lua_checkstack(L, 2 * kPending + 4))
            return false;
        roomLeft = kPending;
        return true;
    }

    bool digits()
    {
        if (!(p < end && *p >= '0' && *p <= '9'))
            return false;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        return true;
    }

    bool number()
    {
        const char* start = p;
        bool integer = true;
        if (*p == '-')
            p++;
        if (p < end && *p == '0')
            p++;
        else if (!digits())
            return fail("invalid number");
        if (p < end && *p == '.')
        {
            p++;
            integer = false;
            if (!digits())
                return fail("invalid number");
        }
        if (p < end && (*p == 'e' || *p == 'E'))
        {
            p++;
            integer = false;
            if (p < end && (*p == '+' || *p == '-'))
                p++;
            if (!digits())
                return fail("invalid number");
        }
        // An integer of at most 15 digits is exact as a double: no strtod.
        const char* digitsStart = *start == '-' ? start + 1 : start;
        if (integer && p - digitsStart <= 15)
        {
            double v = 0;
            for (const char* d = digitsStart; d < p; d++)
                v = v * 10 + (*d - '0');
            lua_pushnumber(L, *start == '-' ? -v : v);
            return true;
        }
        buffer.clear();
        buffer.append(start, p - start);
        if (!buffer.push('\0'))
            return outOfMemory();
        lua_pushnumber(L, strtod(buffer.data(), nullptr));
        return true;
    }

    bool hex4(unsigned& v)
    {
        if (end - p < 4)
            return fail("invalid \\u escape");
        v = 0;
        for (int i = 0; i < 4; i++, p++)
        {
            char c = *p;
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= unsigned(c - '0');
            else if (c >= 'a' && c <= 'f')
                v |= unsigned(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                v |= unsigned(c - 'A' + 10);
            else
                return fail("invalid \\u escape");
        }
        return true;
    }

    void appendCodepoint(unsigned cp)
    {
        if (cp < 0x80)
            buffer.push(char(cp));
        else if (cp < 0x800)
        {
            buffer.push(char(0xC0 | (cp >> 6)));
            buffer.push(char(0x80 | (cp & 0x3F)));
        }
        else if (cp < 0x10000)
        {
            buffer.push(char(0xE0 | (cp >> 12)));
            buffer.push(char(0x80 | ((cp >> 6) & 0x3F)));
            buffer.push(char(0x80 | (cp & 0x3F)));
        }
        else
        {
            buffer.push(char(0xF0 | (cp >> 18)));
            buffer.push(char(0x80 | ((cp >> 12) & 0x3F)));
            buffer.push(char(0x80 | ((cp >> 6) & 0x3F)));
            buffer.push(char(0x80 | (cp & 0x3F)));
        }
    }

    bool escape()
    {
        if (p >= end)
            return fail("unterminated string");
        char e = *p++;
        switch (e)
        {
        case '"':
        case '\\':
        case '/':
            buffer.push(e);
            return true;
        case 'b':
            buffer.push('\b');
            return true;
        case 'f':
            buffer.push('\f');
            return true;
        case 'n':
            buffer.push('\n');
            return true;
        case 'r':
            buffer.push('\r');
            return true;
        case 't':
            buffer.push('\t');
            return true;
        case 'u':
        {
            unsigned cp;
            if (!hex4(cp))
                return false;
            if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 6 && p[0] == '\\' && p[1] == 'u')
            {
                const char* save = p;
                p += 2;
                unsigned low;
                if (!hex4(low))
                    return false;
                if (low >= 0xDC00 && low <= 0xDFFF)
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                else
                    p = save;
            }
            if (cp >= 0xD800 && cp <= 0xDFFF)
                cp = 0xFFFD; // a lone surrogate
            appendCodepoint(cp);
            return true;
        }
        default:
            p--;
            return fail("invalid escape in string");
        }
    }

    bool string()
    {
        p++; // opening quote
        // The common case: no escapes up to the closing quote, pushed
        // straight from the input.
        const char* run = p;
        while (run < end && *run != '"' && *run != '\\' && (unsigned char)*run >= 0x20)
            run++;
        if (run < end && *run == '"')
        {
            lua_pushlstring(L, p, run - p);
            p = run + 1;
            return true;
        }
        buffer.clear();
        for (;;)
        {
            if (p >= end)
                return fail("unterminated string");
            unsigned char c = (unsigned char)*p;
            if (c == '"')
            {
                p++;
                break;
            }
            if (c < 0x20)
                return fail("control character in string");
            if (c == '\\')
            {
                p++;
                if (!escape())
                    return false;
                continue;
            }
            const char* run = p;
            while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
                p++;
            buffer.append(run, p - run);
        }
        if (!buffer.ok())
            return outOfMemory();
        lua_pushlstring(L, buffer.data(), buffer.size());
        return true;
    }

    // Items and members wait on the stack, up to kPending of them, so that
    // a table is made at its size rather than grown key by key; a larger
    // one is made when they overflow, and filled as it goes.
    static const int kPending = 16;

    bool array(int depth)
    {
        p++;
        skipSpace();
        if (p < end && *p == ']')
        {
            p++;
            lua_createtable(L, 0, 0);
            return true;
        }
        int base = lua_gettop(L); // items at base+1..base+n, then the table at base+1
        int n = 0;
        bool made = false;
        for (;;)
        {
            skipSpace();
            if (!value(depth + 1))
                return false;
            n++;
            if (made)
                lua_rawseti(L, base + 1, n);
            else if (n == kPending)
            {
                makeArray(base, n, 4 * kPending);
                made = true;
            }
            skipSpace();
            if (p < end && *p == ',')
            {
                p++;
                continue;
            }
            if (p < end && *p == ']')
            {
                p++;
                if (!made)
                    makeArray(base, n, n);
                return true;
            }
            return fail("expected ',' or ']'");
        }
    }

    // Moves the n items above base into a new table of size slots, left at
    // base+1.
    void makeArray(int base, int n, int size)
    {
        lua_createtable(L, size, 0);
        LuaTable* h = hvalue(L->top - 1);
        const TValue* items = L->base + base; // stack index base+1
        for (int i = 0; i < n; i++)
        {
            setobj2t(L, luaH_setnum(L, h, i + 1), items + i);
            luaC_barriert(L, h, items + i);
        }
        lua_replace(L, base + 1);
        lua_settop(L, base + 1);
    }

    // Moves the n key/value pairs above base into a new table of size
    // slots, left at base+1, in document order (the last of equal keys
    // wins, as when they are set one by one).
    void makeObject(int base, int n, int size)
    {
        lua_createtable(L, 0, size);
        LuaTable* h = hvalue(L->top - 1);
        const TValue* pairs = L->base + base; // stack index base+1
        for (int i = 0; i < n; i++)
        {
            const TValue* key = pairs + 2 * i;
            setobj2t(L, luaH_set(L, h, key), key + 1);
            luaC_barriert(L, h, key + 1);
        }
        lua_replace(L, base + 1);
        lua_settop(L, base + 1);
    }

    bool object(int depth)
    {
        p++;
        skipSpace();
        if (p < end && *p == '}')
        {
            p++;
            lua_newtable(L);
            markObject(L, -1);
            return true;
        }
        int base = lua_gettop(L); // pairs at base+1..base+2n, then the table at base+1
        int n = 0;
        bool made = false;
        for (;;)
        {
            skipSpace();
            if (p >= end || *p != '"')
                return fail("expected a string key");
            if (!string())
                return false;
            skipSpace();
            if (p >= end || *p != ':')
                return fail("expected ':'");
            p++;
            skipSpace();
            if (!value(depth + 1))
                return false;
            n++;
            if (made)
                lua_rawset(L, base + 1);
            else if (n == kPending)
            {
                makeObject(base, n, 4 * kPending);
                made = true;
            }
            skipSpace();
            if (p < end && *p == ',')
            {
                p++;
                continue;
            }
            if (p < end && *p == '}')
            {
                p++;
                if (!made)
                    makeObject(base, n, n);
                return true;
            }
            return fail("expected ',' or '}'");
        }
    }
};

int jsonEncode(lua_State* L)
{
    lua_settop(L, 1);
    // No cap of its own: the text is bounded by the memory limit.
    ts_json_encode(L, 1, "value", SIZE_MAX);
    return 1;
}

int jsonDecode(lua_State* L)
{
    size_t len;
    const char* s = luaL_checklstring(L, 1, &len);
    ts_json_decode(L, s, len);
    return 1;
}

int jsonObject(lua_State* L)
{
    if (lua_isnoneornil(L, 1))
    {
        lua_settop(L, 0);
        lua_newtable(L);
    }
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    markObject(L, 1);
    return 1;
}

int nullToString(lua_State* L)
{
    lua_pushliteral(L, "null");
    return 1;
}

} // namespace

namespace
{

// How an encoding that did not finish is reported.
enum class Overflow
{
    Raise,    // the cap is a limit: raise an error of kind limit
    Truncate, // push the text so far with a marker
};

void encodeOrRaise(lua_State* L, int idx, const char* root, size_t cap, Overflow overflow)
{
    std::string error;
    bool capExceeded, memoryExceeded;
    {
        HeapBuffer text(cap);
        Encoder encoder(L, root, text);
        if (encoder.encode(idx))
        {
            lua_pushlstring(L, encoder.text.data(), encoder.text.size());
            return;
        }
        capExceeded = encoder.text.capExceeded;
        memoryExceeded = encoder.text.memoryExceeded;
        if (capExceeded && overflow == Overflow::Truncate)
        {
            lua_pushlstring(L, encoder.text.data(), encoder.text.size());
            lua_pushliteral(L, "... (cut)");
            lua_concat(L, 2);
            return;
        }
        error.swap(encoder.error);
    }
    if (memoryExceeded)
        ts_raise_memory(L);
    if (capExceeded)
        ts_raise_tagged(L, TS_LIMIT, "value is too large to convert to JSON (limit %zu bytes)", cap);
    luaL_where(L, 1);
    lua_pushlstring(L, error.data(), error.size());
    std::string().swap(error); // lua_error does not return: free it now
    lua_concat(L, 2);
    lua_error(L);
}

// decodeOrRaise pushes the value s holds, or raises json.decode's error;
// with lenient set, text that is not JSON is pushed as it is instead, and
// text nested too deep pushes nothing and returns false (the memory limit
// still raises).
bool decodeOrRaise(lua_State* L, const char* s, size_t len, bool lenient)
{
    std::string error;
    bool memoryExceeded = false;
    {
        int top = lua_gettop(L);
        Decoder decoder(L, s, len);
        if (decoder.decodeDocument())
            return true;
        if (lenient && !decoder.memoryExceeded)
        {
            lua_settop(L, top);
            if (decoder.tooDeep)
                return false;
            lua_pushlstring(L, s, len);
            return true;
        }
        error.swap(decoder.error);
        memoryExceeded = decoder.memoryExceeded;
    }
    if (memoryExceeded)
        ts_raise_memory(L);
    luaL_where(L, 1);
    lua_pushlstring(L, error.data(), error.size());
    std::string().swap(error); // lua_error does not return: free it now
    lua_concat(L, 2);
    lua_error(L);
}

} // namespace

void ts_json_decode(lua_State* L, const char* s, size_t len)
{
    decodeOrRaise(L, s, len, false);
}

// Declared in sdk.cpp, its only user: like ts_json_decode, but text that
// is not JSON is pushed as a string (a response body whose media type says
// JSON, which the host has not parsed), and text nested too deep pushes
// nothing and returns false (sdk.cpp raises the call's error).
bool ts_json_decode_or_text(lua_State* L, const char* s, size_t len)
{
    return decodeOrRaise(L, s, len, true);
}

void ts_json_encode(lua_State* L, int idx, const char* root, size_t cap)
{
    encodeOrRaise(L, idx, root, cap, Overflow::Raise);
}

void ts_json_describe(lua_State* L, int idx, const char* root, size_t cap)
{
    encodeOrRaise(L, idx, root, cap, Overflow::Truncate);
}

// Declared in sdk.cpp, its only user: the n values from stack index first
// on as a JSON array into out (which the caller cleared), or the error
// ts_json_encode raises. Bytes that are not valid UTF-8 are kept as they
// are (InvalidUTF8::Keep): the host reads them back as bytes.
void ts_json_encode_list(lua_State* L, int first, int n, const char* root, HeapBuffer& out)
{
    if (writeFlatList(L, first, n, out))
        return;
    std::string error;
    bool memoryExceeded, capExceeded;
    {
        Encoder encoder(L, root, out, InvalidUTF8::Keep);
        if (encoder.encodeList(first, n))
            return;
        memoryExceeded = out.memoryExceeded;
        capExceeded = out.capExceeded;
        error.swap(encoder.error);
    }
    if (memoryExceeded)
        ts_raise_memory(L);
    if (capExceeded)
        ts_raise_tagged(L, TS_LIMIT, "value is too large to convert to JSON");
    luaL_where(L, 1);
    lua_pushlstring(L, error.data(), error.size());
    std::string().swap(error); // lua_error does not return: free it now
    lua_concat(L, 2);
    lua_error(L);
}

void ts_open_json(lua_State* L)
{
    // json.null: one userdata whose identity is the sentinel.
    lua_newuserdata(L, 0);
    lua_createtable(L, 0, 2);
    lua_pushcfunction(L, nullToString, "tostring");
    lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, "json.null");
    lua_setfield(L, -2, "__metatable");
    lua_setreadonly(L, -1, true);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, kNullKey);
    lua_setfield(L, -2, "null");

    // Tables json.object() or json.decode marked as objects, weakly held.
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, kObjectsKey);

    lua_pushcfunction(L, jsonEncode, "encode");
    lua_setfield(L, -2, "encode");
    lua_pushcfunction(L, jsonDecode, "decode");
    lua_setfield(L, -2, "decode");
    lua_pushcfunction(L, jsonObject, "object");
    lua_setfield(L, -2, "object");
}
