package luau_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
)

// The rules that turn Luau values into JSON (docs/result.md), for script
// results and json.encode alike.
func TestValueConversion(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, expr, want string
	}{
		{"nil", `nil`, `null`},
		{"booleans", `{true, false}`, `[true,false]`},
		{"integral numbers as integers", `{1, -7, 0, 3000000000, 2^52}`, `[1,-7,0,3000000000,4503599627370496]`},
		{"integers at depth", `{a = {b = {3000000000}}}`, `{"a":{"b":[3000000000]}}`},
		{"floats", `{1.5, -0.25, 1/3, 1e300, 2^53, -1e16}`, `[1.5,-0.25,0.3333333333333333,1e+300,9007199254740992.0,-1e+16]`},
		{"negative zero", `-0`, `0`},
		{"NaN and infinities", `{0/0, math.huge, -math.huge}`, `[null,null,null]`},
		{"strings escaped", `"quote\" back\\ nl\n tab\t bell\a del\127"`, `"quote\" back\\ nl\n tab\t bell\u0007 del\u007f"`},
		{"UTF-8 kept", `"héllo ✓ 😀"`, `"héllo ✓ 😀"`},
		{"invalid UTF-8 replaced", `"a\255b\192\128c\237\160\128d"`, `"a` + "\uFFFD" + `b` + strings.Repeat("\uFFFD", 2) + `c` + strings.Repeat("\uFFFD", 3) + `d"`},
		{"sequence is an array", `{"a", "b", "c"}`, `["a","b","c"]`},
		{"empty table is an array", `{}`, `[]`},
		{"json.object is an object", `json.object()`, `{}`},
		{"json.object keeps content", `json.object({x = 1})`, `{"x":1}`},
		{"decoded empty object stays an object", `json.decode("{}")`, `{}`},
		{"decoded empty array stays an array", `json.decode("[]")`, `[]`},
		{"object keys sorted", `{zeta = 1, alpha = 2, Mid = 3, ["1"] = 4}`, `{"1":4,"Mid":3,"alpha":2,"zeta":1}`},
		{"mixed table keeps every key", `{10, 20, name = "x"}`, `{"1":10,"2":20,"name":"x"}`},
		{"sparse array is an object", `{[1] = "a", [3] = "c"}`, `{"1":"a","3":"c"}`},
		{"array not starting at 1", `{[0] = "z", [1] = "a"}`, `{"0":"z","1":"a"}`},
		{"integer keys in decimal", `{[3000000000] = true, [-2] = false}`, `{"-2":false,"3000000000":true}`},
		{"float keys", `{[1.5] = "x"}`, `{"1.5":"x"}`},
		{"json.null", `{json.null, 1}`, `[null,1]`},
		{"nested", `{list = {1, {2, {}}, json.object()}, n = json.null}`, `{"list":[1,[2,[]],{}],"n":null}`},
		{"shared subtable is not a cycle", `(function() local s = {1} return {s, s} end)()`, `[[1],[1]]`},
		{"round trip", `json.decode(json.encode({a = {1, 2, {}}, b = json.object(), c = json.null, d = "é"}))`, `{"a":[1,2,[]],"b":{},"c":null,"d":"é"}`},
		{"encode returns text", `json.encode({b = 1, a = {true}})`, `"{\"a\":[true],\"b\":1}"`},
		{"decode nulls inside arrays", `#json.decode("[1,null,3]")`, `3`},
		{"decode unicode escapes", `json.decode([["\u00e9\ud83d\ude00\ud800x"]])`, `"é😀` + "\uFFFD" + `x"`},
		{"decode numbers", `json.decode("[0, -1.5e2, 1E3, 12345678901234]")`, `[0,-150,1000,12345678901234]`},
		{"decode keys are strings", `json.decode('{"1": "a"}')`, `{"1":"a"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, "return "+c.expr, luau.Limits{})
			check(t, res, want{result: c.want})
		})
	}
}

func TestJSONErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, source, message string
	}{
		{"encode function", `json.encode({f = print})`, "value.f: cannot convert function"},
		{"encode path with index and odd key", `json.encode({{}, {["a b"] = {coroutine.create(print)}}})`, `value[2]["a b"][1]: cannot convert thread`},
		{"encode cycle", `local t = {} t[1] = t json.encode(t)`, "value[1]: cannot convert a table that contains itself"},
		{"encode duplicate key", `json.encode({[1] = 1, ["1"] = 2, x = 3})`, "both a number and a string key '1'"},
		{"encode too deep", `local t = {} local c = t for i = 1, 300 do c[1] = {} c = c[1] end json.encode(t)`, "nested too deeply"},
		{"decode garbage", `json.decode("{nope}")`, "json.decode: expected a string key at position 2"},
		{"decode trailing", `json.decode("[1] x")`, "json.decode: unexpected trailing characters at position 5"},
		{"decode truncated", `json.decode('{"a": [1, 2')`, "json.decode: expected ',' or ']' at end of input"},
		{"decode bad number", `json.decode("01")`, "trailing characters"},
		{"decode bad escape", `json.decode('"\\x"')`, "invalid escape"},
		{"decode control character", "json.decode('\"a\\nb\"')", "control character in string"},
		{"decode too deep", `json.decode(string.rep("[", 500))`, "nesting too deep"},
		{"decode not a string", `json.decode({})`, "string expected"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			check(t, run(t, c.source, luau.Limits{}), want{kind: result.Runtime, message: c.message})
			caught := run(t, "local ok, e = pcall(function() "+c.source+" end) return {ok, e}", luau.Limits{})
			if caught.Error != nil || !strings.HasPrefix(string(caught.Value), `[false,`) {
				t.Errorf("pcall did not catch it: %s %v", caught.Value, caught.Error)
			}
		})
	}
	// The error position names the script line.
	check(t, run(t, "\n\njson.decode('[')", luau.Limits{}), want{kind: result.Runtime, message: "script:3: json.decode", line: 3})
}

// FuzzJSONDecode checks json.decode against Go's encoding/json: valid JSON
// decodes and re-encodes to the same value; anything else is a clean Lua
// error, never a fault of the runtime.
func FuzzJSONDecode(f *testing.F) {
	for _, seed := range []string{
		`null`, `true`, `[1,2,3]`, `{"a":{"b":[]}}`, `{}`, `"\u00e9\ud800"`, `-0.5e-3`, `1e400`,
		`[1,]`, `{"a" 1}`, `"unterminated`, "\"\xff\xfe\"", `[[[[[[]]]]]]`, ` {"x" : null } `, `{"a":1,"a":2}`,
		`[1.5,1e3,-0,2E-2,123456789012345,1234567890123456,-999999999999999]`,
		// More members and items than wait on the stack (Decoder::kPending),
		// a key repeated across that boundary.
		`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k1":"again","k17":[17],"k18":{"x":null}}`,
		`[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,{"a":[]},null,true,"s"]`,
	} {
		f.Add(seed)
	}
	rt := shared.Get(f)
	f.Fuzz(func(t *testing.T, input string) {
		res := rt.Execute(t.Context(), luau.Script{
			Source: []byte(`return json.encode(json.decode((...)))`),
			Args:   []string{input},
		})
		if !json.Valid([]byte(input)) {
			if res.Error == nil || res.Error.Kind != result.Runtime || !strings.Contains(res.Error.Message, "json.decode: ") {
				t.Fatalf("invalid JSON %q: got %s %+v", input, res.Value, res.Error)
			}
			return
		}
		if res.Error != nil {
			if strings.Contains(res.Error.Message, "nesting too deep") && strings.Count(input, "[")+strings.Count(input, "{") > 200 {
				return
			}
			t.Fatalf("valid JSON %q: %+v", input, res.Error)
		}
		var text string
		if err := json.Unmarshal(res.Value, &text); err != nil {
			t.Fatalf("result is not a JSON string: %s", res.Value)
		}
		if got, want := normalise(t, text), normalise(t, input); !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip of %q gave %s: %#v, want %#v", input, text, got, want)
		}
	})
}

// normalise decodes JSON as Go sees it, with numbers as float64 and numbers
// beyond float64's range (which Luau reads as infinities) as nil.
func normalise(t *testing.T, text string) any {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %q: %v", text, err)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case json.Number:
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil && math.IsInf(f, 0) {
				return nil
			}
			return f
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
		case map[string]any:
			for k := range v {
				v[k] = walk(v[k])
			}
		}
		return v
	}
	return walk(v)
}

// FuzzStringConversion checks that any byte string converts to valid JSON
// whose text is the input with each invalid UTF-8 byte replaced by U+FFFD.
func FuzzStringConversion(f *testing.F) {
	for _, seed := range []string{"", "plain", "é", "\xff", "\xed\xa0\x80", "\xc0\x80", "a\x00b", "\U0010FFFF", "\xf4\x90\x80\x80", "\xe2\x82"} {
		f.Add(seed)
	}
	rt := shared.Get(f)
	f.Fuzz(func(t *testing.T, input string) {
		res := rt.Execute(t.Context(), luau.Script{Source: []byte(`return {(...)}`), Args: []string{input}})
		if res.Error != nil {
			t.Fatalf("%q: %+v", input, res.Error)
		}
		if !utf8.Valid(res.Value) {
			t.Fatalf("%q: result is not valid UTF-8: %q", input, res.Value)
		}
		var got []string
		if err := json.Unmarshal(res.Value, &got); err != nil || len(got) != 1 {
			t.Fatalf("%q: result %s: %v", input, res.Value, err)
		}
		var want strings.Builder
		for i := 0; i < len(input); {
			r, size := utf8.DecodeRuneInString(input[i:])
			want.WriteRune(r) // RuneError for each invalid byte
			i += size
		}
		if got[0] != want.String() {
			t.Fatalf("%q converted to %q, want %q", input, got[0], want.String())
		}
	})
}

// FuzzFlatObjects: a table of string keys and scalar values, which the
// encoder writes straight from the table's nodes (writeFlatObject),
// converts to the same text as through the general path, which a
// metatable forces; so do the tables around that shape (number keys, more
// than 16 members, nested tables, json.null) that fall back from it.
func FuzzFlatObjects(f *testing.F) {
	for _, seed := range []string{"", "\x03abc\x01", "\x02id\x02\x07\x04name\x04Rex\xff\xfe\x00\x05", "\x07\x00\x05\x06\x01\x01x\x06",
		strings.Repeat("\x02ab\x02\x10", 20), strings.Repeat("\x01a\x03\x09\x03", 17)} {
		f.Add(seed)
	}
	rt := shared.Get(f)
	src := []byte(`
		local data = ...
		local t, i, n = {}, 1, 0
		local function byte() local b = data:byte(i) or 0 i += 1 return b end
		while i <= #data and n < 40 do
			local kl = byte() % 8
			local key = data:sub(i, i + kl - 1)
			i += kl
			if kl == 7 then key = #key end
			local sel = byte() % 8
			local v
			if sel == 0 then v = true
			elseif sel == 1 then v = false
			elseif sel == 2 then v = byte() - 128
			elseif sel == 3 then v = (byte() + 1) / 7 * 10 ^ (byte() % 40 - 20)
			elseif sel == 4 then v = data:sub(i, i + 5) i += 6
			elseif sel == 5 then v = ({0/0, math.huge, -math.huge, -0})[byte() % 4 + 1]
			elseif sel == 6 then v = json.null
			else v = {byte()} end
			t[key] = v
			n += 1
		end
		local _, fast = pcall(json.encode, t)
		setmetatable(t, {})
		local _, general = pcall(json.encode, t)
		return {tostring(fast), tostring(general)}`)
	f.Fuzz(func(t *testing.T, input string) {
		res := rt.Execute(t.Context(), luau.Script{Source: src, Args: []string{input}})
		var got [2]string
		if res.Error != nil || json.Unmarshal(res.Value, &got) != nil {
			t.Fatalf("%q: %s %+v", input, res.Value, res.Error)
		}
		if got[0] != got[1] {
			t.Fatalf("%q: %s directly, %s through the general path", input, got[0], got[1])
		}
	})
}

// TestJSONTableSizes: tables convert the same whatever their size, on
// either side of the number of members the converters keep on the Lua
// stack (16), weak tables included.
func TestJSONTableSizes(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 15, 16, 17, 40} {
		var keys, items []string
		for i := 1; i <= n; i++ {
			keys = append(keys, strconv.Quote("k"+strconv.Itoa(1000+i))+":"+strconv.Itoa(i))
			items = append(items, strconv.Itoa(i))
		}
		object := "{" + strings.Join(keys, ",") + "}"
		array := "[" + strings.Join(items, ",") + "]"
		build := `local t = {} for i = 1, ` + strconv.Itoa(n) + ` do t["k" .. (1000 + i)] = i end`
		for _, c := range []struct{ name, src, want string }{
			{"encode object", build + ` return t`, object},
			{"encode weak object", build + ` setmetatable(t, {__mode = "v"}) return json.encode(t)`, strconv.Quote(object)},
			{"encode number keys", `local t = {} for i = 1, ` + strconv.Itoa(n) + ` do t[i * 2] = i end return json.encode(t)`, ""},
			{"decode object", `return json.decode('` + object + `')`, object},
			{"decode array", `return json.decode('` + array + `')`, array},
			{"decode duplicate keys, the last wins", `local t = json.decode('{` + strings.Join(keys, ",") + `,"k1001":"last"}') return t.k1001`, `"last"`},
		} {
			t.Run(c.name+" "+strconv.Itoa(n), func(t *testing.T) {
				t.Parallel()
				res := run(t, c.src, luau.Limits{})
				if c.want == "" { // number keys: sorted as text
					var m map[string]int
					var text string
					if res.Error != nil || json.Unmarshal(res.Value, &text) != nil || json.Unmarshal([]byte(text), &m) != nil || len(m) != n {
						t.Fatalf("%s %+v", res.Value, res.Error)
					}
					return
				}
				check(t, res, want{result: c.want})
			})
		}
	}
	for _, c := range []struct{ name, src, want string }{
		{"15-digit integers", `return json.decode("[999999999999999,-999999999999999,-0,0]")`, `[999999999999999,-999999999999999,0,0]`},
		{"longer numbers", `return json.decode("[9007199254740993,1234567890123456,0.1]")`, `[9007199254740992.0,1234567890123456,0.1]`},
		{"strings with and without escapes", `return json.decode('["plain","esc\\u00e9\\n","", "a\\"b"]')`, `["plain","escé\n","","a\"b"]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			check(t, run(t, c.src, luau.Limits{}), want{result: c.want})
		})
	}
}
