package client

import (
	"net/http"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
)

// AnswerOptions is what a request asks of the answer (pkg/api's).
type AnswerOptions = api.AnswerOptions

// appendChatAnswer appends the answer options of a chat completion.
func (c *Client) appendChatAnswer(o *body) {
	a := &c.cfg.Answer
	if len(a.Tools) > 0 && o.member("tools") {
		o.b = append(o.b, a.Tools...)
	}
	if a.ToolChoice != "" && o.member("tool_choice") {
		o.b = appendToolChoice(o.b, a.ToolChoice, false)
	}
	if a.ReasoningEffort != "" && o.member("reasoning_effort") {
		o.b = appendJSONString(o.b, a.ReasoningEffort)
	}
	if len(a.ChatTemplateKwargs) > 0 && o.member("chat_template_kwargs") {
		o.b = append(o.b, a.ChatTemplateKwargs...)
	}
}

// appendToolChoice appends a tool choice: a mode as a string, a function's
// name as OpenAI's named choice (flat: the Responses API's form).
func appendToolChoice(b []byte, choice string, flat bool) []byte {
	switch choice {
	case "auto", "required", "none":
		return appendJSONString(b, choice)
	}
	if flat {
		b = append(b, `{"type":"function","name":`...)
		b = appendJSONString(b, choice)
		return append(b, '}')
	}
	b = append(b, `{"type":"function","function":{"name":`...)
	b = appendJSONString(b, choice)
	return append(b, "}}"...)
}

// answerHint adds what to do to a 400 that refused the tools: a server
// without automatic tool choice (vLLM started without
// --enable-auto-tool-choice --tool-call-parser).
func (c *Client) answerHint(status int, msg string) string {
	a := &c.cfg.Answer
	if status != http.StatusBadRequest || len(a.Tools) == 0 || !strings.Contains(msg, "tool") || a.ToolChoice == "required" {
		return msg
	}
	return msg + " (the server has no automatic tool choice: start vLLM with --enable-auto-tool-choice --tool-call-parser NAME, or send --tool-choice required or a function's name)"
}

// checkAnswer sets res.Structured from the answer's text when answers are
// checked.
func (c *Client) checkAnswer(res *Result) {
	if c.cfg.Answer.Check == nil {
		return
	}
	res.Structured = 2
	if c.cfg.Answer.Check(res.Text) {
		res.Structured = 1
	}
}
