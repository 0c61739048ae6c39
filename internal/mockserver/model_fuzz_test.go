package mockserver

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/valyala/fastjson"
)

// FuzzSchemaInstance: whatever the schema, its instances (valid, invalid,
// padded) are bounded, and the valid one and its padded forms parse as
// JSON.
func FuzzSchemaInstance(f *testing.F) {
	for _, s := range testSchemas {
		f.Add(s, 100)
	}
	for _, s := range []string{`true`, `{}`, `{"$ref":"#"}`, `{"type":"object","properties":{"a":{"$ref":"#"},"b":{"$ref":"#"}},"required":["a","b"]}`,
		`{"type":"array","items":{"type":"array","items":{"$ref":"#"},"minItems":64},"minItems":64}`, `{"enum":[]}`, `{"type":["null"]}`,
		`{"type":"integer","minimum":1e300}`, `{"type":"string","minLength":1e9}`, `{"properties":{"\u0000\"":{"const":"\n"}},"required":["\u0000\""]}`,
		`{"properties":{"a":{"const":00},"b":{"enum":[1.,"x"]},"c":{"const":{"d":-01}}}}`} {
		f.Add(s, 7)
	}
	f.Fuzz(func(t *testing.T, schema string, n int) {
		v, err := fastjson.Parse(schema)
		if err != nil {
			return
		}
		n = max(0, min(n, 1<<16))
		for _, omit := range []bool{false, true} {
			in, _ := schemaInstance(v, omit)
			if len(in.b) > maxInstanceBytes+(1<<16)+64 {
				t.Fatalf("%s: an instance of %d bytes", schema, len(in.b))
			}
			if omit {
				continue
			}
			for _, p := range [][]byte{in.b, in.padded(n)} {
				if !json.Valid(p) {
					t.Fatalf("%s: instance %q is not JSON", schema, p)
				}
			}
			if cuts := splitTokens(in.padded(n), max(n/4, 1)); cuts[len(cuts)-1] != len(in.padded(n)) {
				t.Fatalf("cuts %v", cuts)
			}
		}
	})
}

// FuzzGeneration: whatever chat request the server accepts — tools,
// tool choices, response formats, reasoning — every chunk it streams and
// its whole answer are JSON, and so are the Responses API's events.
func FuzzGeneration(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"a"}],` + weatherTools + `,"max_tokens":30}`,
		`{"messages":[{"role":"user","content":"a"}],` + weatherTools + `,"tool_choice":"required","max_tokens":3}`,
		`{"messages":[{"role":"user","content":"a"}],"response_format":{"type":"json_schema","json_schema":{"schema":` + testSchemas["refs"] + `}},"max_tokens":40}`,
		`{"messages":[{"role":"user","content":"a"}],"response_format":{"type":"json_object"},"max_tokens":1,"include_reasoning":false}`,
		`{"input":[{"role":"user","content":"a"}],"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"max_output_tokens":9}`,
		`{"input":"a","text":{"format":{"type":"json_schema","schema":{"type":"string"}}},"max_output_tokens":9,"instructions":"\u0000"}`,
	} {
		f.Add([]byte(s), uint8(0))
	}
	s, err := New(Config{Models: []string{"m"}, Reasoning: ReasoningConfig{Tokens: LengthDist{0, 5}, Field: ReasoningFieldBoth},
		Tools: ToolConfig{CallShare: 0.5, InvalidShare: 0.5}, Structured: StructuredConfig{InvalidShare: 0.5}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, id uint8) {
		responses := bytes.Contains(body, []byte(`"input"`))
		var req request
		var meta respMeta
		if responses {
			req, meta, err = s.parseResponses(body)
		} else {
			req, err = s.parse(body, true)
		}
		if err != nil || req.maxTokens > 4096 {
			return
		}
		g := generation{s: s, req: req, chat: !responses, out: s.outputTokens(req, int64(id)), id: int64(id)}
		g.plan()
		if g.out < 0 || g.out > req.maxTokens || g.reasoning > g.out {
			t.Fatalf("%s: %d tokens of which %d reasoning, max %d", body, g.out, g.reasoning, req.maxTokens)
		}
		check := func(what string, b []byte) {
			if !json.Valid(b) {
				t.Fatalf("%s: %s is not JSON: %s", body, what, b)
			}
		}
		if responses {
			rs := &respStream{g: &g, meta: &meta, id: "resp_x"}
			check("the response", rs.appendResponse(nil, true))
			var b []byte
			for k := range g.out {
				b = rs.appendToken(b, k)
			}
			b = rs.appendEnd(b)
			for ev := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
				_, data, _ := strings.Cut(ev, "\ndata: ")
				check("an event", []byte(data))
			}
			return
		}
		check("the whole answer", g.whole())
		var b []byte
		for k := -1; k < g.out; k++ {
			b = g.appendChunk(b, k)
		}
		b = g.appendFinishChunk(b)
		b = g.appendUsageChunk(b)
		for ev := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
			check("a chunk", []byte(strings.TrimPrefix(ev, "data: ")))
		}
	})
}
