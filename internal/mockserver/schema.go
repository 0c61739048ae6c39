package mockserver

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// instance is a JSON text the server answers with (structured output, a
// tool call's arguments) and where it can be made longer: padAt is the
// offset of the end of the first string whose length is free (-1: none),
// padCap how many bytes it may still take (-1: any).
type instance struct {
	b      []byte
	padAt  int
	padCap int
}

// maxSchemaDepth bounds the nesting (and $ref chains) a schema's instance
// follows; deeper schemas get null.
const maxSchemaDepth = 16

// maxArrayItems bounds the items an array of an instance gets.
const maxArrayItems = 64

// maxInstanceBytes bounds an instance's size: beyond it, values still to
// write are null (a schema of nested arrays or $refs could otherwise ask
// for an instance of exponential size).
const maxInstanceBytes = 32 << 10

// schemaInstance returns a simple JSON instance valid against schema: an
// object gets its required properties (every property when none is
// required), each by its type; enum and const give their first value;
// anyOf/oneOf/allOf their first (non-null) branch; local $refs are
// followed; strings honour minLength/maxLength and the common formats,
// numbers minimum/maximum (exclusive too), arrays minItems/maxItems.
// Patterns, multipleOf and combinations beyond the first branch are not
// honoured. With omitRequired, the top-level object leaves its first
// required property out (an instance the schema rejects); ok reports
// whether there was one to leave out.
func schemaInstance(schema *fastjson.Value, omitRequired bool) (in instance, ok bool) {
	g := schemaGen{root: schema, out: instance{padAt: -1}}
	g.omit = omitRequired
	g.value(schema, 0)
	return g.out, g.omitted
}

type schemaGen struct {
	root          *fastjson.Value
	out           instance
	omit, omitted bool
}

// literal writes a const or enum value as the schema gave it; the
// schema's parser takes numbers JSON does not (00, 1.), so a value that
// would not read back as JSON is written as null instead.
func (g *schemaGen) literal(v *fastjson.Value) {
	start := len(g.out.b)
	g.out.b = v.MarshalTo(g.out.b)
	if !json.Valid(g.out.b[start:]) {
		g.out.b = append(g.out.b[:start], "null"...)
	}
}

func (g *schemaGen) value(s *fastjson.Value, depth int) {
	if depth > maxSchemaDepth || len(g.out.b) > maxInstanceBytes {
		g.out.b = append(g.out.b, "null"...)
		return
	}
	if s == nil || s.Type() != fastjson.TypeObject {
		g.str(nil, depth) // true, {} or anything else: any value
		return
	}
	if ref := string(s.GetStringBytes("$ref")); ref != "" {
		g.value(g.resolve(ref), depth+1)
		return
	}
	if c := s.Get("const"); c != nil {
		g.literal(c)
		return
	}
	if e := s.GetArray("enum"); len(e) > 0 {
		g.literal(e[0])
		return
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts := s.GetArray(k); len(alts) > 0 {
			pick := alts[0]
			for _, a := range alts {
				if string(a.GetStringBytes("type")) != "null" {
					pick = a
					break
				}
			}
			g.value(pick, depth+1)
			return
		}
	}
	typ := string(s.GetStringBytes("type"))
	if ts := s.GetArray("type"); len(ts) > 0 {
		typ = string(ts[0].GetStringBytes())
		for _, t := range ts {
			if string(t.GetStringBytes()) != "null" {
				typ = string(t.GetStringBytes())
				break
			}
		}
	}
	if typ == "" {
		switch {
		case s.Get("properties") != nil || s.Get("required") != nil:
			typ = "object"
		case s.Get("items") != nil || s.Get("prefixItems") != nil:
			typ = "array"
		}
	}
	switch typ {
	case "object":
		g.object(s, depth)
	case "array":
		g.array(s, depth)
	case "integer", "number":
		g.number(s, typ == "integer")
	case "boolean":
		g.out.b = append(g.out.b, "true"...)
	case "null":
		g.out.b = append(g.out.b, "null"...)
	default:
		g.str(s, depth)
	}
}

// resolve follows a local reference (#/$defs/X, #/definitions/X, #).
func (g *schemaGen) resolve(ref string) *fastjson.Value {
	path, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	v := g.root
	for p := range strings.SplitSeq(strings.TrimPrefix(path, "/"), "/") {
		if p == "" {
			continue
		}
		p = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
		if v = v.Get(p); v == nil {
			return nil
		}
	}
	return v
}

func (g *schemaGen) object(s *fastjson.Value, depth int) {
	props := s.Get("properties")
	var names []string
	for _, r := range s.GetArray("required") {
		names = append(names, string(r.GetStringBytes()))
	}
	if len(names) == 0 && props != nil && props.Type() == fastjson.TypeObject {
		props.GetObject().Visit(func(k []byte, _ *fastjson.Value) { names = append(names, string(k)) })
	}
	if g.omit && depth == 0 && len(s.GetArray("required")) > 0 {
		names, g.omitted = names[1:], true
	}
	g.out.b = append(g.out.b, '{')
	for i, n := range names {
		if i > 0 {
			g.out.b = append(g.out.b, ',')
		}
		g.out.b = appendJSONString(g.out.b, []byte(n))
		g.out.b = append(g.out.b, ':')
		var ps *fastjson.Value
		if props != nil {
			ps = props.Get(n)
		}
		g.value(ps, depth+1)
	}
	g.out.b = append(g.out.b, '}')
}

func (g *schemaGen) array(s *fastjson.Value, depth int) {
	n := 1
	if v := s.Get("minItems"); v != nil {
		n = max(n, v.GetInt())
	}
	if v := s.Get("maxItems"); v != nil {
		n = min(n, v.GetInt())
	}
	n = max(0, min(n, maxArrayItems))
	prefix := s.GetArray("prefixItems")
	g.out.b = append(g.out.b, '[')
	for i := range n {
		if i > 0 {
			g.out.b = append(g.out.b, ',')
		}
		if i < len(prefix) {
			g.value(prefix[i], depth+1)
		} else {
			g.value(s.Get("items"), depth+1)
		}
	}
	g.out.b = append(g.out.b, ']')
}

func (g *schemaGen) number(s *fastjson.Value, integer bool) {
	lo, hi := -1e300, 1e300
	if v := s.Get("minimum"); v != nil {
		lo = v.GetFloat64()
	}
	if v := s.Get("exclusiveMinimum"); v != nil && v.Type() == fastjson.TypeNumber {
		lo = v.GetFloat64() + 1
		if !integer {
			lo = v.GetFloat64() + 0.5
		}
	}
	if v := s.Get("maximum"); v != nil {
		hi = v.GetFloat64()
	}
	if v := s.Get("exclusiveMaximum"); v != nil && v.Type() == fastjson.TypeNumber {
		hi = v.GetFloat64() - 1
		if !integer {
			hi = v.GetFloat64() - 0.5
		}
	}
	x := 0.0
	if lo > x {
		x = lo
	}
	if hi < x {
		x = hi
	}
	if integer {
		// The smallest integer ≥ x (a fractional minimum rounds up).
		i := int64(x)
		if float64(i) < x {
			i++
		}
		g.out.b = strconv.AppendInt(g.out.b, i, 10)
		return
	}
	g.out.b = strconv.AppendFloat(g.out.b, x, 'g', -1, 64)
}

// str appends a string value; one of free length becomes the padding
// point if there is none yet.
func (g *schemaGen) str(s *fastjson.Value, depth int) {
	minLen, maxLen := 0, -1
	var format, pattern []byte
	if s != nil {
		minLen = max(0, min(s.GetInt("minLength"), 1<<16))
		if v := s.Get("maxLength"); v != nil {
			maxLen = v.GetInt()
		}
		format, pattern = s.GetStringBytes("format"), s.GetStringBytes("pattern")
	}
	var text string
	switch string(format) {
	case "date-time":
		text = "2026-01-01T00:00:00Z"
	case "date":
		text = "2026-01-01"
	case "time":
		text = "00:00:00Z"
	case "email":
		text = "mock@example.com"
	case "uri", "url":
		text = "https://example.com/"
	case "uuid":
		text = "00000000-0000-4000-8000-000000000000"
	case "ipv4":
		text = "127.0.0.1"
	default:
		text = strings.Repeat("x", minLen)
	}
	g.out.b = append(g.out.b, '"')
	g.out.b = append(g.out.b, text...)
	if g.out.padAt < 0 && format == nil && pattern == nil && depth <= maxSchemaDepth {
		g.out.padAt = len(g.out.b)
		g.out.padCap = -1
		if maxLen >= 0 {
			g.out.padCap = max(0, maxLen-len(text))
		}
	}
	g.out.b = append(g.out.b, '"')
}

// padded returns the instance made n bytes long where it can be (words of
// " tok" in its free string, then blanks after the value, which JSON
// allows), or as it is when it is already that long.
func (in instance) padded(n int) []byte {
	grow := n - len(in.b)
	if grow <= 0 {
		return in.b
	}
	b := make([]byte, 0, n)
	inside := 0
	if in.padAt >= 0 {
		inside = grow
		if in.padCap >= 0 {
			inside = min(inside, in.padCap)
		}
		b = append(b, in.b[:in.padAt]...)
		for i := range inside {
			b = append(b, tokenText[i%len(tokenText)])
		}
		b = append(b, in.b[in.padAt:]...)
	} else {
		b = append(b, in.b...)
	}
	for len(b) < n {
		b = append(b, ' ')
	}
	return b
}

// splitTokens cuts text into n pieces of about equal length, at UTF-8
// character boundaries (fewer when text has fewer characters), and returns
// the n+1 cut offsets.
func splitTokens(text []byte, n int) []int {
	n = max(1, min(n, utf8.RuneCount(text)))
	cuts := make([]int, 0, n+1)
	cuts = append(cuts, 0)
	for i := 1; i < n; i++ {
		c := max(i*len(text)/n, cuts[len(cuts)-1]+1)
		for c < len(text) && !utf8.RuneStart(text[c]) {
			c++
		}
		cuts = append(cuts, c)
	}
	return append(cuts, len(text))
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}
