package mockserver

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/valyala/fastjson"
)

// compileSchema compiles a JSON Schema with an independent validator.
func compileSchema(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// validates reports whether text parses and is valid against sch.
func validates(sch *jsonschema.Schema, text string) bool {
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	return err == nil && sch.Validate(inst) == nil
}

var testSchemas = map[string]string{
	"weather":   `{"type":"object","properties":{"city":{"type":"string"},"temp_c":{"type":"number"}},"required":["city","temp_c"]}`,
	"bounds":    `{"type":"object","properties":{"n":{"type":"integer","minimum":3,"maximum":9},"x":{"type":"number","exclusiveMinimum":0.5},"neg":{"type":"integer","maximum":-4},"s":{"type":"string","minLength":3,"maxLength":5}},"required":["n","x","neg","s"]}`,
	"enums":     `{"type":"object","properties":{"mood":{"enum":["happy","sad"]},"k":{"const":42},"flag":{"type":"boolean"},"none":{"type":"null"}},"required":["mood","k","flag","none"]}`,
	"arrays":    `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","format":"email"},"minItems":2,"maxItems":3},"pair":{"type":"array","prefixItems":[{"type":"integer"},{"type":"boolean"}]}},"required":["tags","pair"]}`,
	"nested":    `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":["null","string"]},"when":{"type":"string","format":"date-time"}},"required":["b","when"]}},"required":["a"],"additionalProperties":false}`,
	"refs":      `{"$defs":{"item":{"type":"object","properties":{"id":{"type":"string","format":"uuid"}},"required":["id"]}},"type":"object","properties":{"items":{"type":"array","items":{"$ref":"#/$defs/item"}},"first":{"$ref":"#/$defs/item"}},"required":["items","first"]}`,
	"alts":      `{"type":"object","properties":{"v":{"anyOf":[{"type":"null"},{"type":"integer","minimum":10}]},"w":{"oneOf":[{"type":"string","maxLength":2}]}},"required":["v","w"]}`,
	"optional":  `{"type":"object","properties":{"p":{"type":"string"},"q":{"type":"integer"}}}`,
	"no type":   `{"properties":{"p":{}},"required":["p"]}`,
	"top array": `{"type":"array","items":{"type":"integer"},"minItems":1}`,
	"string":    `{"type":"string","maxLength":40}`,
}

// TestSchemaInstancesValidate: every instance, padded to any length,
// is valid for an independent validator; the invalid one is not.
func TestSchemaInstancesValidate(t *testing.T) {
	for name, schema := range testSchemas {
		t.Run(name, func(t *testing.T) {
			sch := compileSchema(t, schema)
			v := fastjson.MustParse(schema)
			in, _ := schemaInstance(v, false)
			for _, n := range []int{0, 17, 400, 4000} {
				text := in.padded(n)
				if !validates(sch, string(text)) || len(text) < n {
					t.Errorf("padded to %d: %s: not valid or too short", n, text)
				}
			}
			s := &Server{}
			var req request
			if err := s.parseFormat(fastjson.MustParse(`{"type":"json_schema","json_schema":{"name":"x","schema":`+schema+`}}`), &req, false); err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{0, 400} {
				if text := req.format.invalid.padded(n); validates(sch, string(text)) {
					t.Errorf("the invalid instance padded to %d validates: %s", n, text)
				}
			}
		})
	}
}

// structuredChat sends a chat request with a response format and returns
// its streamed content, its number of content chunks and its
// completion_tokens.
func structuredChat(t *testing.T, url, format string, maxTokens int) (string, int, float64) {
	t.Helper()
	r := post(t, url, "/v1/chat/completions", `{"messages":[{"role":"user","content":"json please"}],"response_format":`+format+`,"max_tokens":`+strconv.Itoa(maxTokens)+`,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)
	var content strings.Builder
	for _, c := range r.chunks {
		ch, _ := c["choices"].([]any)
		if len(ch) == 0 {
			continue
		}
		if d, _ := ch[0].(map[string]any)["delta"].(map[string]any); d != nil {
			s, _ := d["content"].(string)
			content.WriteString(s)
		}
	}
	completion, _ := r.usage["completion_tokens"].(float64)
	return content.String(), r.texts, completion
}

// TestStructuredOutput: a json_schema answer streams as many tokens as
// asked, and put together it is valid against the schema; json_object
// gives an object; a seeded share is invalid.
func TestStructuredOutput(t *testing.T) {
	_, url := start(t, Config{Structured: StructuredConfig{InvalidShare: 0.3}, Seed: 5})
	sch := compileSchema(t, testSchemas["bounds"])
	format := `{"type":"json_schema","json_schema":{"name":"b","schema":` + testSchemas["bounds"] + `}}`
	invalid := 0
	for i := range 60 {
		n := 5 + i*3
		text, chunks, completion := structuredChat(t, url, format, n)
		if chunks != n || completion != float64(n) {
			t.Errorf("max_tokens %d: %d content chunks, %v completion tokens", n, chunks, completion)
		}
		if !validates(sch, text) {
			invalid++
		}
	}
	if invalid < 8 || invalid > 30 {
		t.Errorf("%d of 60 invalid, want about 18", invalid)
	}
	_, url = start(t, Config{})
	text, chunks, _ := structuredChat(t, url, `{"type":"json_object"}`, 50)
	var obj map[string]any
	if err := json.Unmarshal([]byte(text), &obj); err != nil || chunks != 50 {
		t.Errorf("json_object: %q (%v), %d chunks: want a JSON object in 50", text, err, chunks)
	}
	for _, bad := range []string{`{"type":"json_schema"}`, `{"type":"grammar"}`} {
		if r := post(t, url, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"response_format":`+bad+`}`); r.status != 400 || !strings.HasPrefix(r.body, `{"error":{"message":"response_format: `) {
			t.Errorf("%s: %d %s, want a 400", bad, r.status, r.body)
		}
	}
}

// TestStructuredWholeAndResponses: the non-streamed answer and the
// Responses API's text.format give valid instances too, at the latency
// model's time.
func TestStructuredWholeAndResponses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := responsesServer(t, Config{})
		sch := compileSchema(t, testSchemas["weather"])
		w := serveTimed(s, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":`+testSchemas["weather"]+`}},"max_tokens":30,"ignore_eos":true}`)
		var r struct {
			Choices []struct{ Message struct{ Content string } }
		}
		if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil || !validates(sch, r.Choices[0].Message.Content) || w.writes[0].at != 30*ms+29*10*ms {
			t.Errorf("chat at %v: %s", w.writes[0].at, w.Body.String())
		}
		w = serveTimed(s, "/v1/responses", `{"input":"a","text":{"format":{"type":"json_schema","name":"w","schema":`+testSchemas["weather"]+`}},"max_output_tokens":30,"ignore_eos":true}`)
		got := readResponse(t, w.Body.String())
		if len(got.Output) != 1 || !validates(sch, got.Output[0].Content[0].Text) || got.Usage.OutputTokens != 30 {
			t.Errorf("responses: %s", w.Body.String())
		}
	})
}
