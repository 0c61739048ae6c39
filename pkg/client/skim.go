package client

// skimChunk reads a stream chunk of the common kind — a JSON object whose
// first choice carries text, or none, with no usage object and no error —
// without building a parsed value: it validates the JSON as it goes and
// notes only what token the first choice carries: output when its text
// (completions) or delta content (chat) is a non-empty string, else
// reasoning when the delta's "reasoning" or "reasoning_content" is. It
// reports ok false for anything else (usage, an error, tool calls,
// content parts, duplicate-sensitive or escaped keys, invalid JSON, a choices value that
// is not an array, deep nesting), which the full decoder then reads:
// whatever it accepts, the full decoder accepts and reads the same
// (FuzzSkimChunk checks it).
func skimChunk(data []byte, chat bool) (kind tokenKind, ok bool) {
	kind, _, ok = skimSpan(data, chat)
	return kind, ok
}

// skimSpan is skimChunk, also saying where the content of the string that
// decided the kind lies in data (text, content or reasoning; zero when the
// kind is tokNone).
func skimSpan(data []byte, chat bool) (kind tokenKind, span [2]int, ok bool) {
	s := skimmer{b: data}
	s.ws()
	if s.peek() != '{' {
		return tokNone, span, false
	}
	var seenChoices bool
	ok = s.fields(func(key []byte) bool {
		switch string(key) {
		case "error":
			return false
		case "usage":
			return s.peek() != '{' && s.value(0)
		case "choices":
			if seenChoices {
				return s.value(0)
			}
			seenChoices = true
			if s.peek() != '[' {
				return false
			}
			var ok bool
			kind, ok = s.choices(chat)
			return ok
		}
		return s.value(0)
	})
	s.ws()
	if !ok || s.i != len(s.b) {
		return tokNone, span, false // invalid, or trailing data
	}
	if kind != tokNone {
		span = s.span
	}
	return kind, span, true
}

// skimDepth bounds the nesting skimChunk follows; deeper chunks go to the
// full decoder.
const skimDepth = 32

type skimmer struct {
	b []byte
	i int
	// span is where the content of the string that decided the first
	// choice's kind lies (set by choice and delta).
	span [2]int
}

func (s *skimmer) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *skimmer) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *skimmer) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// key reads a member's key and its colon. A key with an escape is refused
// (the full decoder compares keys unescaped).
func (s *skimmer) key() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) && !strStop[s.b[s.i]] {
		s.i++
	}
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false // an escape, a control character or no end
	}
	k := s.b[start:s.i]
	s.i++
	s.ws()
	if !s.eat(':') {
		return nil, false
	}
	s.ws()
	return k, true
}

// strStop marks the bytes that end a run of plain string content: the
// closing quote, an escape, and the control characters JSON forbids.
var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// str reads a string value and reports whether it is empty.
func (s *skimmer) str() (empty, ok bool) {
	if !s.eat('"') {
		return false, false
	}
	start := s.i
	b := s.b
	for {
		for s.i < len(b) && !strStop[b[s.i]] {
			s.i++
		}
		if s.i >= len(b) {
			return false, false
		}
		switch c := b[s.i]; {
		case c == '"':
			s.i++
			return s.i-1 == start, true
		case c == '\\':
			s.i++
			if s.i >= len(b) {
				return false, false
			}
			switch b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if s.i+4 >= len(b) {
					return false, false
				}
				for _, h := range b[s.i+1 : s.i+5] {
					if !isHex(h) {
						return false, false
					}
				}
				s.i += 4
			default:
				return false, false
			}
			s.i++
		default: // a control character
			return false, false
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// value skips one JSON value, validating it.
func (s *skimmer) value(depth int) bool {
	if depth > skimDepth {
		return false
	}
	switch c := s.peek(); {
	case c == '"':
		_, ok := s.str()
		return ok
	case c == '{':
		return s.items('}', func() bool {
			if _, ok := s.str(); !ok {
				return false
			}
			s.ws()
			if !s.eat(':') {
				return false
			}
			s.ws()
			return s.value(depth + 1)
		})
	case c == '[':
		return s.items(']', func() bool { return s.value(depth + 1) })
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return false
}

// items skips the items of an object or an array (s at its opening
// bracket) up to end, item skipping one (for an object, a key and its
// value).
func (s *skimmer) items(end byte, item func() bool) bool {
	s.i++
	s.ws()
	if s.eat(end) {
		return true
	}
	for {
		s.ws()
		if !item() {
			return false
		}
		s.ws()
		if s.eat(end) {
			return true
		}
		if !s.eat(',') {
			return false
		}
	}
}

func (s *skimmer) lit(w string) bool {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

// number skips a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *skimmer) number() bool {
	s.eat('-')
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case '1' <= c && c <= '9':
		s.digits()
	default:
		return false
	}
	if s.eat('.') && !s.digits() {
		return false
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

func (s *skimmer) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// choices reads the choices array: the token its first element carries.
func (s *skimmer) choices(chat bool) (kind tokenKind, ok bool) {
	n := 0
	ok = s.items(']', func() bool {
		n++
		if n == 1 && s.peek() == '{' {
			var ok bool
			kind, ok = s.choice(chat)
			return ok
		}
		return s.value(1)
	})
	if !ok {
		return tokNone, false
	}
	return kind, true
}

// choice reads the first choice: completions' text, or chat's delta.
func (s *skimmer) choice(chat bool) (kind tokenKind, ok bool) {
	want := "text"
	if chat {
		want = "delta"
	}
	seen := false
	ok = s.fields(func(key []byte) bool {
		if string(key) != want || seen {
			return s.value(2)
		}
		seen = true
		switch {
		case chat && s.peek() == '{':
			var ok bool
			kind, ok = s.delta()
			return ok
		case !chat && s.peek() == '"':
			start := s.i + 1
			empty, ok := s.str()
			if !empty {
				kind, s.span = tokOutput, [2]int{start, s.i - 1}
			}
			return ok
		}
		return s.value(2)
	})
	if !ok {
		return tokNone, false
	}
	return kind, true
}

// delta reads a chat delta: output when its content is a non-empty
// string, else reasoning when its reasoning — vLLM's "reasoning" since
// v0.11.1, "reasoning_content" before v0.16 — is (the first of each key
// counts). Tool calls (a "tool_calls" value other than null) and content
// that is an array (content parts) or an object are left to the full
// decoder.
func (s *skimmer) delta() (kind tokenKind, ok bool) {
	var content, reasoning, legacy, seenContent, seenReasoning, seenLegacy bool
	var contentAt, thinkAt [2]int
	ok = s.fields(func(key []byte) bool {
		var into *bool
		var at *[2]int
		switch {
		case string(key) == "tool_calls":
			return s.peek() == 'n' && s.value(3)
		case string(key) == "content" && !seenContent:
			seenContent, into, at = true, &content, &contentAt
		case string(key) == "reasoning" && !seenReasoning:
			seenReasoning, into, at = true, &reasoning, &thinkAt
		case string(key) == "reasoning_content" && !seenLegacy:
			seenLegacy, into, at = true, &legacy, &thinkAt
		}
		if into == &content && (s.peek() == '[' || s.peek() == '{') {
			return false // content parts (or an odd form): the full decoder
		}
		if into == nil || s.peek() != '"' {
			return s.value(3)
		}
		start := s.i + 1
		empty, ok := s.str()
		*into = !empty
		if !empty {
			*at = [2]int{start, s.i - 1}
		}
		return ok
	})
	switch {
	case !ok:
		return tokNone, false
	case content:
		s.span = contentAt
		return tokOutput, true
	case reasoning || legacy:
		s.span = thinkAt
		return tokReasoning, true
	}
	return tokNone, true
}

// fields reads an object (s at its '{') field by field: field reads the
// value of each key (s after the key's colon). Keys with escapes are
// refused (key), so that the full decoder reads them.
func (s *skimmer) fields(field func(key []byte) bool) bool {
	s.i++
	s.ws()
	if s.eat('}') {
		return true
	}
	for {
		s.ws()
		key, ok := s.key()
		if !ok || !field(key) {
			return false
		}
		s.ws()
		if s.eat('}') {
			return true
		}
		if !s.eat(',') {
			return false
		}
	}
}

// chunkShape is the last chunk skimmed whole that carried a token: a
// stream's chunks differ, as a rule, in their token's text alone (vLLM
// repeats id, created, model and the choice's other fields), so the next
// chunk that is this one byte for byte but for that text — a non-empty
// run of plain string content: no quote, escape or control character —
// parses the same way and carries the same kind of token, without
// skimming it again (FuzzChunkShape checks it against skimChunk).
type chunkShape struct {
	b          []byte // the chunk
	start, end int    // its token's text, b[start:end]
	kind       tokenKind
	chat       bool
}

// maxShape bounds the chunk a shape keeps.
const maxShape = 4 << 10

// skim is skimChunk through the shape of the chunk before.
func (sh *chunkShape) skim(data []byte, chat bool) (tokenKind, bool) {
	if sh.kind != tokNone && sh.chat == chat && sh.match(data) {
		return sh.kind, true
	}
	kind, span, ok := skimSpan(data, chat)
	if ok && kind != tokNone && len(data) <= maxShape {
		sh.b = append(sh.b[:0], data...)
		sh.start, sh.end, sh.kind, sh.chat = span[0], span[1], kind, chat
	}
	return kind, ok
}

// match reports whether data is the shape's chunk with other text.
func (sh *chunkShape) match(data []byte) bool {
	suffix := len(sh.b) - sh.end
	if len(data) <= sh.start+suffix || string(data[:sh.start]) != string(sh.b[:sh.start]) ||
		string(data[len(data)-suffix:]) != string(sh.b[sh.end:]) {
		return false
	}
	for _, c := range data[sh.start : len(data)-suffix] {
		if strStop[c] {
			return false
		}
	}
	return true
}
