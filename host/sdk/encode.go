package sdk

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// Values are JSON as decoded with UseNumber: nil, bool, json.Number,
// string, []any, map[string]any.

// normalize fixes what crosses the boundary imprecisely: an empty Lua
// table arrives as [] whatever it meant, so where the schema wants an
// object and no array, [] becomes {}.
func normalize(api *catalog.API, s *catalog.Schema, v any, depth int) any {
	s = api.Resolve(s)
	if s == nil || depth > 64 {
		return v
	}
	switch x := v.(type) {
	case []any:
		if len(x) == 0 && wantsObject(api, s) && !wantsArray(api, s) {
			return map[string]any{}
		}
		item := s.Items
		for i := range x {
			x[i] = normalize(api, item, x[i], depth+1)
		}
	case map[string]any:
		for k, e := range x {
			ps := propertySchema(api, s, k)
			x[k] = normalize(api, ps, e, depth+1)
		}
	}
	return v
}

func wantsObject(api *catalog.API, s *catalog.Schema) bool {
	if s.Has("object") && len(s.Type) > 0 {
		return true
	}
	for _, sub := range append(append(append([]*catalog.Schema(nil), s.AllOf...), s.AnyOf...), s.OneOf...) {
		if r := api.Resolve(sub); r != nil && r != s && len(r.Type) > 0 && r.Has("object") {
			return true
		}
	}
	return len(s.Type) == 0 && (len(s.Properties) > 0 || s.AdditionalProperties != nil)
}

func wantsArray(api *catalog.API, s *catalog.Schema) bool {
	if len(s.Type) > 0 && s.Has("array") {
		return true
	}
	for _, sub := range append(append(append([]*catalog.Schema(nil), s.AllOf...), s.AnyOf...), s.OneOf...) {
		if r := api.Resolve(sub); r != nil && r != s && len(r.Type) > 0 && r.Has("array") {
			return true
		}
	}
	return false
}

// propertySchema finds the schema of property k of s (through allOf).
func propertySchema(api *catalog.API, s *catalog.Schema, k string) *catalog.Schema {
	if p := s.Property(k); p != nil {
		return p
	}
	for _, sub := range s.AllOf {
		if r := api.Resolve(sub); r != nil && r != s {
			if p := r.Property(k); p != nil {
				return p
			}
		}
	}
	return s.AdditionalProperties
}

// scalar renders a primitive value as parameter text: numbers as written
// (integers without ".0"), booleans as true/false, null as empty.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// sortedKeys gives object keys in a stable order (Lua tables have none).
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// escapeStrict percent-encodes everything but RFC 3986's unreserved
// characters; a value of only dots is encoded whole, so that "." and ".."
// can never act as path segments.
func escapeStrict(s string) string {
	if strings.Trim(s, ".") == "" && s != "" {
		return strings.Repeat("%2E", len(s))
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		if c := s[i]; unreserved(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', upperHex[c>>4], upperHex[c&15])
		}
	}
	return string(b)
}

const upperHex = "0123456789ABCDEF"

func unreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// escapeQuery encodes a query key or value: strict, or with reserved
// characters kept (allowReserved).
func escapeQuery(s string, allowReserved bool) string {
	if !allowReserved {
		return escapeStrict(s)
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c > ' ' && c < 0x7f && !strings.ContainsRune("\"<>\\^`{|}%&=#+ ", rune(c)) {
			b = append(b, c)
		} else {
			b = append(b, '%', upperHex[c>>4], upperHex[c&15])
		}
	}
	return string(b)
}

// errNotScalar reports a nested value where a style allows only scalars.
var errNotScalar = errors.New("nested tables cannot be encoded in this parameter's style")

// parts splits a value for styles: a scalar, a list of scalars, or
// key/value pairs.
func parts(v any) (scalarText string, list []string, pairs [][2]string, err error) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			s, ok := scalar(e)
			if !ok {
				return "", nil, nil, errNotScalar
			}
			list = append(list, s)
		}
		if list == nil {
			list = []string{}
		}
		return "", list, nil, nil
	case map[string]any:
		for _, k := range sortedKeys(x) {
			s, ok := scalar(x[k])
			if !ok {
				return "", nil, nil, errNotScalar
			}
			pairs = append(pairs, [2]string{k, s})
		}
		if pairs == nil {
			pairs = [][2]string{}
		}
		return "", nil, pairs, nil
	}
	s, _ := scalar(v)
	return s, nil, nil, nil
}

// pathValue expands a path parameter by style (simple, label, matrix).
// An empty expansion, or one of only dots, is refused: it would change
// which path the request goes to.
func pathValue(p *catalog.Param, v any) (string, error) {
	text, err := expandPath(p, v)
	if err == nil && strings.Trim(text, ".") == "" {
		return "", errors.New("a path parameter cannot be empty")
	}
	return text, err
}

func expandPath(p *catalog.Param, v any) (string, error) {
	if p.ContentType != "" {
		j, _ := json.Marshal(v)
		return escapeStrict(string(j)), nil
	}
	s, list, pairs, err := parts(v)
	if err != nil {
		return "", err
	}
	esc := escapeStrict
	join := func(items []string, sep string) string {
		for i := range items {
			items[i] = esc(items[i])
		}
		return strings.Join(items, sep)
	}
	flat := func(kvSep, sep string) string {
		var items []string
		for _, kv := range pairs {
			items = append(items, esc(kv[0])+kvSep+esc(kv[1]))
		}
		return strings.Join(items, sep)
	}
	switch p.Style {
	case "label":
		switch {
		case list != nil && p.Explode:
			return "." + join(list, "."), nil
		case list != nil:
			return "." + join(list, ","), nil
		case pairs != nil && p.Explode:
			return "." + flat("=", "."), nil
		case pairs != nil:
			return "." + flat(",", ","), nil
		}
		return "." + esc(s), nil
	case "matrix":
		name := ";" + esc(p.Name)
		switch {
		case list != nil && p.Explode:
			var out strings.Builder
			for _, e := range list {
				out.WriteString(name + "=" + esc(e))
			}
			return out.String(), nil
		case list != nil:
			return name + "=" + join(list, ","), nil
		case pairs != nil && p.Explode:
			return ";" + flat("=", ";"), nil
		case pairs != nil:
			return name + "=" + flat(",", ","), nil
		}
		return name + "=" + esc(s), nil
	}
	// simple
	switch {
	case list != nil:
		return join(list, ","), nil
	case pairs != nil && p.Explode:
		return flat("=", ","), nil
	case pairs != nil:
		return flat(",", ","), nil
	}
	return esc(s), nil
}

// queryValue appends a query parameter to q by style (form,
// spaceDelimited, pipeDelimited, tabDelimited, deepObject).
func queryValue(q *strings.Builder, p *catalog.Param, v any) error {
	add := func(k, v string, rawKey bool) {
		if q.Cap() == 0 {
			q.Grow(64) // one allocation for the common short query
		}
		if q.Len() > 0 {
			q.WriteByte('&')
		}
		if rawKey {
			q.WriteString(k)
		} else {
			q.WriteString(escapeQuery(k, false))
		}
		q.WriteByte('=')
		q.WriteString(v)
	}
	ev := func(s string) string { return escapeQuery(s, p.AllowReserved) }
	if p.ContentType != "" {
		j, _ := json.Marshal(v)
		add(p.Name, ev(string(j)), false)
		return nil
	}
	if p.Style == "deepObject" {
		m, ok := v.(map[string]any)
		if !ok {
			s, ok := scalar(v)
			if !ok {
				return errors.New("deepObject needs a table of names to values")
			}
			add(p.Name, ev(s), false)
			return nil
		}
		return deepObject(add, escapeQuery(p.Name, false), m, ev, 0)
	}
	s, list, pairs, err := parts(v)
	if err != nil {
		return err
	}
	sep := ","
	switch p.Style {
	case "spaceDelimited":
		sep = "%20"
	case "pipeDelimited":
		sep = "|"
	case "tabDelimited":
		sep = "%09"
	}
	switch {
	case list != nil && p.Explode:
		for _, e := range list {
			add(p.Name, ev(e), false)
		}
	case list != nil:
		for i := range list {
			list[i] = ev(list[i])
		}
		add(p.Name, strings.Join(list, sep), false)
	case pairs != nil && p.Explode:
		for _, kv := range pairs {
			add(kv[0], ev(kv[1]), false)
		}
	case pairs != nil:
		var items []string
		for _, kv := range pairs {
			items = append(items, ev(kv[0]), ev(kv[1]))
		}
		add(p.Name, strings.Join(items, sep), false)
	default:
		add(p.Name, ev(s), false)
	}
	return nil
}

// deepObject writes name[k]=v, nested tables as name[k][k2]=v and lists
// as repeated name[k]=v.
func deepObject(add func(k, v string, raw bool), prefix string, m map[string]any, ev func(string) string, depth int) error {
	if depth > 16 {
		return errors.New("deepObject nests too deep")
	}
	for _, k := range sortedKeys(m) {
		key := prefix + "[" + escapeQuery(k, false) + "]"
		switch x := m[k].(type) {
		case map[string]any:
			if err := deepObject(add, key, x, ev, depth+1); err != nil {
				return err
			}
		case []any:
			for _, e := range x {
				s, ok := scalar(e)
				if !ok {
					return errNotScalar
				}
				add(key, ev(s), true)
			}
		default:
			s, _ := scalar(x)
			add(key, ev(s), true)
		}
	}
	return nil
}

// headerValue renders a header parameter (style simple).
func headerValue(p *catalog.Param, v any) (string, error) {
	var s string
	if p.ContentType != "" {
		j, _ := json.Marshal(v)
		s = string(j)
	} else {
		var err error
		if s, err = commaSeparated(v, p.Explode); err != nil {
			return "", err
		}
	}
	if strings.ContainsAny(s, "\r\n\x00") {
		return "", errors.New("a header value cannot contain line breaks or NUL")
	}
	return s, nil
}

// cookieValue renders a cookie parameter (style form) as name=value.
func cookieValue(p *catalog.Param, v any) (string, error) {
	s, err := commaSeparated(v, false)
	if err != nil {
		return "", err
	}
	return escapeStrict(p.Name) + "=" + escapeStrict(s), nil
}

// commaSeparated is v unescaped, as style simple writes it: a scalar's
// text; a list's items joined by commas; an object's keys and values
// joined by commas, or with explode its key=value pairs joined by commas.
func commaSeparated(v any, explode bool) (string, error) {
	text, list, pairs, err := parts(v)
	if err != nil {
		return "", err
	}
	switch {
	case list != nil:
		return strings.Join(list, ","), nil
	case pairs != nil:
		items := make([]string, 0, 2*len(pairs))
		for _, kv := range pairs {
			if explode {
				items = append(items, kv[0]+"="+kv[1])
			} else {
				items = append(items, kv[0], kv[1])
			}
		}
		return strings.Join(items, ","), nil
	}
	return text, nil
}

// isJSONType reports whether a media type is JSON.
func isJSONType(mt string) bool {
	mt = strings.ToLower(strings.TrimSpace(strings.SplitN(mt, ";", 2)[0]))
	return mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "*/*" || mt == "application/*"
}

// encodeBody picks the first media type of the body that can carry v and
// encodes it.
func encodeBody(api *catalog.API, body *catalog.Body, v any) (data []byte, contentType string, err error) {
	_, isString := v.(string)
	for _, mt := range body.Content {
		t := strings.ToLower(strings.TrimSpace(strings.SplitN(mt.Type, ";", 2)[0]))
		switch {
		case isJSONType(t):
			if t == "*/*" || t == "application/*" {
				t = "application/json"
			}
			data, err := json.Marshal(v)
			return data, t, err
		case t == "application/x-www-form-urlencoded":
			m, ok := v.(map[string]any)
			if !ok {
				return nil, "", errors.New("a form body must be a table of field names to values")
			}
			data, err := formBody(m)
			return data, t, err
		case t == "multipart/form-data":
			m, ok := v.(map[string]any)
			if !ok {
				return nil, "", errors.New("a multipart body must be a table of field names to values")
			}
			return multipartBody(api, mt.Schema, m)
		case isString:
			return []byte(v.(string)), mt.Type, nil
		}
	}
	var types []string
	for _, mt := range body.Content {
		types = append(types, mt.Type)
	}
	return nil, "", fmt.Errorf("the body must be a string for %s", strings.Join(types, ", "))
}

// formValue renders a form field: scalars as text, tables as JSON.
func formValue(v any) string {
	if s, ok := scalar(v); ok {
		return s
	}
	j, _ := json.Marshal(v)
	return string(j)
}

func formBody(m map[string]any) ([]byte, error) {
	var b strings.Builder
	for _, k := range sortedKeys(m) {
		values := []any{m[k]}
		if list, ok := m[k].([]any); ok {
			values = list
		}
		for _, v := range values {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(k) + "=" + url.QueryEscape(formValue(v)))
		}
	}
	return []byte(b.String()), nil
}

// multipartBody encodes m as multipart/form-data, its fields in name
// order. The boundary is taken from the parts' content (a digest of
// them), so the same fields are the same bytes every time: a plan and a
// replay compare them (host/contract/effects), and no part holds the boundary.
func multipartBody(api *catalog.API, schema *catalog.Schema, m map[string]any) ([]byte, string, error) {
	type formPart struct {
		header textproto.MIMEHeader
		text   string
	}
	var parts []formPart
	digest := sha256.New()
	s := api.Resolve(schema)
	for _, k := range sortedKeys(m) {
		values := []any{m[k]}
		if list, ok := m[k].([]any); ok {
			values = list
		}
		var ps *catalog.Schema
		if s != nil {
			ps = api.Resolve(propertySchema(api, s, k))
		}
		if ps != nil && ps.Has("array") && len(ps.Type) > 0 && ps.Items != nil {
			ps = api.Resolve(ps.Items)
		}
		binary := ps != nil && (ps.Format == "binary" || ps.Format == "byte")
		for _, v := range values {
			h := textproto.MIMEHeader{}
			disposition := fmt.Sprintf(`form-data; name="%s"`, escapeQuotes(k))
			text, isScalar := scalar(v)
			switch {
			case binary:
				disposition += fmt.Sprintf(`; filename="%s"`, escapeQuotes(k))
				h.Set("Content-Type", "application/octet-stream")
			case !isScalar:
				j, _ := json.Marshal(v)
				text = string(j)
				h.Set("Content-Type", "application/json")
			}
			h.Set("Content-Disposition", disposition)
			parts = append(parts, formPart{h, text})
			for _, field := range []string{disposition, h.Get("Content-Type"), text} {
				fmt.Fprintf(digest, "%d:%s", len(field), field)
			}
		}
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(hex.EncodeToString(digest.Sum(nil))[:48]); err != nil {
		return nil, "", err
	}
	for _, p := range parts {
		part, err := w.CreatePart(p.header)
		if err != nil {
			return nil, "", err
		}
		part.Write([]byte(p.text))
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

func escapeQuotes(s string) string {
	return strings.NewReplacer("\\", "\\\\", `"`, "%22", "\r", "%0D", "\n", "%0A").Replace(s)
}
