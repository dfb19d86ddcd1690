// json_string.h: appendJSONString, which writes a string as a JSON string
// literal (quotes, backslashes and control characters escaped; other bytes
// as they are). Shared by the native benchmark harness
// (luau-build/native/harness.cpp) and the type checker's shim
// (luau-build/check-shim/check.cpp); the wasm module's shim has its own
// encoder (json.cpp).
#pragma once

#include <stdio.h>

#include <string>

inline void appendJSONString(std::string& out, const std::string& s)
{
    out += '"';
    for (unsigned char c : s)
    {
        switch (c)
        {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (c < 0x20)
            {
                char esc[8];
                snprintf(esc, sizeof(esc), "\\u%04x", c);
                out += esc;
            }
            else
                out += char(c);
        }
    }
    out += '"';
}
