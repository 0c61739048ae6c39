package options

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/fineserve-gen/fineserve-gen/internal/bounded"
	"github.com/fineserve-gen/fineserve-gen/internal/jsonscan"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
)

// AnswerOptions are the flags of what requests ask of the answer: the
// reasoning knobs, tools and a response format (docs/REASONING.md).
type AnswerOptions struct {
	// ReasoningEffort is sent as reasoning_effort (--reasoning-effort).
	ReasoningEffort string
	// ChatTemplateKwargs is a JSON object sent as chat_template_kwargs.
	ChatTemplateKwargs string
	// KeepReasoning sends a session's reasoning back in its history
	// (--keep-reasoning-in-history).
	KeepReasoning bool
	// ToolsFile is OpenAI's tools JSON (--tools); ToolChoice auto,
	// required, none or a tool's name (--tool-choice).
	ToolsFile  string
	ToolChoice string
	// ToolResultLen is the tokens of the tool message that answers a tool
	// call in a session before its next turn (--tool-result-len).
	ToolResultLen int
	// ResponseFormat is json_object or json_schema:FILE
	// (--response-format).
	ResponseFormat string

	// loaded is what Validate read from the files, for ClientConfig.
	loaded *api.AnswerOptions
	// refused counts the answers past the bounds of a schema check.
	refused *refusals
}

// Limits of the answer options' inputs.
const (
	maxAnswerFile    = 4 << 20 // a tools or schema file
	MaxToolResultLen = 1 << 20 // tokens of a tool message
)

// ReasoningEfforts are the reasoning_effort values vLLM takes.
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

// toolName is what OpenAI allows as a function's name.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// validate checks the answer options against the backend's row, reads the
// tools and schema files and keeps what it read for ClientConfig. Every
// problem is returned at once, each naming its flag (and its file and
// JSON path).
func (a *AnswerOptions) validate(b *api.Kind) error {
	var errs []error
	add := func(format string, v ...any) { errs = append(errs, fmt.Errorf(format, v...)) }
	out := &api.AnswerOptions{ReasoningEffort: a.ReasoningEffort, ToolChoice: a.ToolChoice, KeepReasoning: a.KeepReasoning}
	name := "this backend"
	if b != nil {
		name = "--backend " + b.Name
	}
	unsupported := func(flag string, needs api.Caps, what string) {
		if b != nil && !b.Has(needs) {
			add("%s: %s has no %s (use --backend %s)", flag, name, what, api.WithCaps(needs))
		}
	}
	reasoning := api.Reasoning
	if a.ReasoningEffort != "" {
		if !slices.Contains(ReasoningEfforts, a.ReasoningEffort) {
			add("--reasoning-effort %q: want one of %s", a.ReasoningEffort, strings.Join(ReasoningEfforts, ", "))
		}
		unsupported("--reasoning-effort", reasoning, "reasoning")
	}
	if a.ChatTemplateKwargs != "" {
		if err := jsonObject([]byte(a.ChatTemplateKwargs)); err != nil {
			add("--chat-template-kwargs: %w", err)
		} else {
			out.ChatTemplateKwargs = compact([]byte(a.ChatTemplateKwargs))
		}
		if b != nil && !b.Has(api.ChatTemplate) {
			add("--chat-template-kwargs: %s sends no chat template arguments (use --backend %s, or --extra-request-body where the server takes them)", name, api.WithCaps(api.ChatTemplate))
		}
	}
	if a.KeepReasoning {
		unsupported("--keep-reasoning-in-history", reasoning, "reasoning")
	}
	var names []string
	if a.ToolsFile != "" {
		tools, n, err := readTools(a.ToolsFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--tools %s: %w", a.ToolsFile, err))
		}
		out.Tools, names = tools, n
		unsupported("--tools", api.Tools, "tool calls")
	}
	switch c := a.ToolChoice; {
	case c == "":
	case c == "auto" || c == "required" || c == "none":
		if a.ToolsFile == "" && c != "none" {
			add("--tool-choice %s needs --tools FILE", c)
		}
	case a.ToolsFile == "":
		add("--tool-choice %s (a function's name) needs --tools FILE", c)
	case names != nil && !slices.Contains(names, c):
		add("--tool-choice %q: not a function of --tools %s (%s); want auto, required, none or one of them", c, a.ToolsFile, strings.Join(names, ", "))
	}
	if a.ToolResultLen < 0 || a.ToolResultLen > MaxToolResultLen {
		add("--tool-result-len %d: want 0 to %d tokens", a.ToolResultLen, MaxToolResultLen)
	}
	if a.ResponseFormat != "" {
		var err error
		a.refused = &refusals{}
		if out.ResponseFormat, out.Check, err = responseFormat(a.ResponseFormat, a.refused); err != nil {
			errs = append(errs, fmt.Errorf("--response-format %s: %w", a.ResponseFormat, err))
		}
		unsupported("--response-format", api.ResponseFormat, "response format")
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	a.loaded = out
	return nil
}

// Loaded returns what validate read (validating first if it has not
// run: an invalid option then sends nothing of its own).
func (a *AnswerOptions) Loaded() api.AnswerOptions {
	if a.loaded == nil {
		_ = a.validate(nil)
	}
	if a.loaded == nil {
		return api.AnswerOptions{}
	}
	return *a.loaded
}

// readTools reads an OpenAI tools file: a JSON array of
// {"type":"function","function":{"name","description","parameters"}}. It
// returns the array compacted and the functions' names.
func readTools(path string) (json.RawMessage, []string, error) {
	raw, err := readAnswerFile(path)
	if err != nil {
		return nil, nil, err
	}
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, nil, fmt.Errorf("want a JSON array of tools: %w", jsonErr(raw, err))
	}
	if len(tools) == 0 {
		return nil, nil, errors.New("no tools (vLLM refuses an empty tools list)")
	}
	var names []string
	var errs []error
	for i, t := range tools {
		at := fmt.Sprintf("[%d]", i)
		var typ string
		if err := json.Unmarshal(t["type"], &typ); err != nil || typ != "function" {
			errs = append(errs, fmt.Errorf("%s.type: want \"function\"", at))
		}
		var fn struct {
			Name       *string         `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal(t["function"], &fn); err != nil || t["function"] == nil {
			errs = append(errs, fmt.Errorf("%s.function: want an object with a name", at))
			continue
		}
		switch {
		case fn.Name == nil:
			errs = append(errs, fmt.Errorf("%s.function.name: missing", at))
		case !toolName.MatchString(*fn.Name):
			errs = append(errs, fmt.Errorf("%s.function.name %q: want 1 to 64 letters, digits, _ or -", at, *fn.Name))
		case slices.Contains(names, *fn.Name):
			errs = append(errs, fmt.Errorf("%s.function.name %q: a second function of that name", at, *fn.Name))
		default:
			names = append(names, *fn.Name)
		}
		if len(fn.Parameters) > 0 {
			if _, err := compileSchema(fn.Parameters, path); err != nil {
				errs = append(errs, fmt.Errorf("%s.function.parameters: %w", at, err))
			}
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return compact(raw), names, nil
}

// responseFormat parses --response-format: json_object, or
// json_schema:FILE (a JSON Schema). It returns OpenAI's response_format
// object and the check of an answer: a JSON object, or a JSON value valid
// against the schema.
func responseFormat(spec string, refused *refusals) (json.RawMessage, func([]byte) bool, error) {
	if spec == "json_object" {
		isObject := func(text []byte) bool { return jsonObject(text) == nil }
		return json.RawMessage(`{"type":"json_object"}`), isObject, nil
	}
	path, ok := strings.CutPrefix(spec, "json_schema:")
	if !ok || path == "" {
		return nil, nil, errors.New("want json_object or json_schema:FILE")
	}
	raw, err := readAnswerFile(path)
	if err != nil {
		return nil, nil, err
	}
	sch, err := compileSchema(raw, path)
	if err != nil {
		return nil, nil, err
	}
	name := schemaName.ReplaceAllString(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), "_")
	if len(name) > 64 {
		name = name[:64]
	}
	f, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": name, "schema": json.RawMessage(compact(raw))}})
	valid := func(text []byte) bool {
		if why := beyondCheck(text); why != "" {
			refused.note(why)
			return false
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
		return err == nil && sch.Validate(v) == nil
	}
	return f, valid, nil
}

// Bounds of an answer checked against a schema: the validator's memory
// grows with the answer's size times its depth (a self-referring schema
// checked against an answer nested 9,000 deep took 718 MB), so an answer
// past either is invalid without being checked.
const (
	MaxAnswerDepth = 128     // nesting of arrays and objects
	MaxAnswerCheck = 1 << 20 // bytes
)

// beyondCheck returns why text is past the bounds of a schema check ("":
// within them). It reads text once and holds nothing.
func beyondCheck(text []byte) string {
	if len(text) > MaxAnswerCheck {
		return fmt.Sprintf("an answer of %d bytes, more than the %d checked against a schema", len(text), MaxAnswerCheck)
	}
	depth := 0
	var str jsonscan.Strings
	for _, c := range text {
		if in, _ := str.Step(c); in {
			continue
		}
		switch c {
		case '[', '{':
			if depth++; depth > MaxAnswerDepth {
				return fmt.Sprintf("an answer nested more than %d deep (arrays and objects), the most checked against a schema", MaxAnswerDepth)
			}
		case ']', '}':
			depth--
		}
	}
	return ""
}

// refusals counts the answers past the bounds of a schema check, and keeps
// the first reason, for the warning at the end of the run.
type refusals struct {
	mu    sync.Mutex
	n     int64
	first string
}

func (r *refusals) note(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		r.first = why
	}
	r.n++
}

// TakeRefused returns how many answers were counted invalid without a
// schema check since the last call (past MaxAnswerDepth or
// MaxAnswerCheck) and the first reason, for the warning at the end of a
// run.
func (a *AnswerOptions) TakeRefused() (int64, string) { return a.refused.take() }

// take returns the count and first reason, and resets them (r may be
// nil: none).
func (r *refusals) take() (int64, string) {
	if r == nil {
		return 0, ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n, first := r.n, r.first
	r.n, r.first = 0, ""
	return n, first
}

// schemaName keeps what OpenAI allows in a schema's name.
var schemaName = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// readAnswerFile reads a tools or schema file, bounded.
func readAnswerFile(path string) ([]byte, error) { return bounded.ReadFile(path, maxAnswerFile) }

// jsonErr adds the line and column of a JSON syntax or type error in raw.
func jsonErr(raw []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
		if te.Field != "" {
			return fmt.Errorf("%s: want %s, got JSON %s", te.Field, te.Type, te.Value)
		}
	}
	if off < 0 {
		return err
	}
	line := 1 + bytes.Count(raw[:min(off, int64(len(raw)))], []byte("\n"))
	return fmt.Errorf("line %d: %w", line, err)
}

// jsonObject checks that raw is one JSON object.
func jsonObject(raw []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		if err == nil {
			err = errors.New("null")
		}
		return fmt.Errorf("want a JSON object: %w", jsonErr(raw, err))
	}
	return nil
}

func compact(raw []byte) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// compileSchema compiles a JSON Schema (draft 2020-12 unless it says
// otherwise) read from the file at path; an error names the file (as the
// schema's location) and the JSON path within it.
func compileSchema(raw []byte, path string) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, jsonErr(raw, err)
	}
	loc, err := filepath.Abs(path)
	if err != nil {
		loc = path
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}
