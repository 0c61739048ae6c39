package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

// addAnswerFlags declares the flags of what requests ask of the answer:
// reasoning, tools, a response format (docs/REASONING.md).
func addAnswerFlags(fs *pflag.FlagSet, o *options.Options) {
	a := &o.Answer
	fs.StringVar(&a.ReasoningEffort, "reasoning-effort", a.ReasoningEffort, "sent as reasoning_effort (chat) or reasoning.effort (responses): "+strings.Join(options.ReasoningEfforts, ", "))
	fs.StringVar(&a.ChatTemplateKwargs, "chat-template-kwargs", a.ChatTemplateKwargs, `JSON object sent as chat_template_kwargs, e.g. '{"enable_thinking": false}'`)
	fs.BoolVar(&a.KeepReasoning, "keep-reasoning-in-history", a.KeepReasoning, "sessions send earlier turns' reasoning back (default: the answers only)")
	fs.StringVar(&a.ToolsFile, "tools", a.ToolsFile, "OpenAI tools JSON file ([{\"type\":\"function\",\"function\":{\"name\",…}}]) sent with every request")
	fs.StringVar(&a.ToolChoice, "tool-choice", a.ToolChoice, "with --tools: auto, required, none or a function's name (default: the server's, auto)")
	fs.IntVar(&a.ToolResultLen, "tool-result-len", a.ToolResultLen, "sessions: tokens of the tool message that answers a tool call before the next turn")
	fs.StringVar(&a.ResponseFormat, "response-format", a.ResponseFormat, "json_object or json_schema:FILE: sent as response_format; answers are checked (structured_valid_share)")
}
