package client

import (
	"fmt"
	"io"

	"github.com/valyala/fastjson"
)

// The openai-images backend posts OpenAI's image-generation request to
// /v1/images/generations:
//
//	{"model": M, "prompt": "…", "n": 4, "size": "512x512",
//	 "num_inference_steps": 30, "negative_prompt": "…",
//	 "loras": ["a", "b"], "controlnets": ["canny"]}
//
// model, prompt, n and size are OpenAI's; the steps, negative prompt and
// adapters are extra members, as diffusion servers take them (each sent
// only when the request has it; --extra-request-body overrides any). The
// answer is OpenAI's {"created": …, "data": [{"b64_json": …} or {"url": …},
// …]}: a request is measured end to end, and the images in data are
// counted. There is no token stream: no time to first token.

// maxImageResponse bounds an image-generation response body.
const maxImageResponse = 512 << 20

// negativeWords make up negative prompts (their content does not matter to
// the load; their length does).
var negativeWords = []string{"blurry", "lowres", "watermark", "text", "cropped", "deformed", "noisy", "dark"}

// appendImageBody appends the JSON body of an image-generation request.
func (c *Client) appendImageBody(b []byte, req *Request) []byte {
	model := req.Model
	if model == "" {
		model = c.cfg.Model
	}
	n, steps, neg := 1, 0, 0
	var loras, cnets []string
	if g := req.Gen; g != nil {
		n, steps, neg = max(g.Images, 1), g.Steps, g.NegativeTokens
		loras, cnets = g.LoRAs, g.ControlNets
	}
	b = append(b, '{')
	first := true
	member := func(key string) bool {
		if c.omit[key] {
			return false
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		return true
	}
	if member("model") {
		b = appendJSONString(b, model)
	}
	if member("prompt") {
		b = req.appendPrompt(b)
	}
	if member("n") {
		b = appendInt(b, n)
	}
	if c.cfg.ImageSize != "" && member("size") {
		b = appendJSONString(b, c.cfg.ImageSize)
	}
	if steps > 0 && member("num_inference_steps") {
		b = appendInt(b, steps)
	}
	if neg > 0 && member("negative_prompt") {
		b = append(b, '"')
		for i := range neg {
			if i > 0 {
				b = append(b, ' ')
			}
			b = append(b, negativeWords[i%len(negativeWords)]...)
		}
		b = append(b, '"')
	}
	if len(loras) > 0 && member("loras") {
		b = appendStrings(b, loras)
	}
	if len(cnets) > 0 && member("controlnets") {
		b = appendStrings(b, cnets)
	}
	if first {
		if len(c.extra) > 0 {
			b = append(b, c.extra[1:]...)
		}
	} else {
		b = append(b, c.extra...)
	}
	return append(b, '}')
}

func appendStrings(b []byte, s []string) []byte {
	b = append(b, '[')
	for i, v := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, v)
	}
	return append(b, ']')
}

// readImages consumes an image-generation response: it counts the images
// in data and takes usage.input_tokens (or prompt_tokens) as the prompt
// size. FirstToken stays 0: the request has no first token.
func (c *Client) readImages(d *decoder, body io.Reader, res *Result) error {
	raw, err := io.ReadAll(io.LimitReader(body, maxImageResponse+1))
	res.End = c.since()
	if err != nil {
		return err
	}
	if len(raw) > maxImageResponse {
		return protocolError{fmt.Sprintf("image response larger than %d MiB", maxImageResponse>>20)}
	}
	v, err := d.parser.ParseBytes(raw)
	if err != nil || v.Type() != fastjson.TypeObject {
		return protocolError{fmt.Sprintf("invalid JSON response: %q", truncate(string(raw), 200))}
	}
	if e := v.Get("error"); e != nil && e.Type() != fastjson.TypeNull {
		return chunkError(e)
	}
	data := v.Get("data")
	if data == nil || data.Type() != fastjson.TypeArray {
		return protocolError{"image response has no data list"}
	}
	items, _ := data.Array()
	for _, it := range items {
		if it.Type() != fastjson.TypeObject || (it.Get("b64_json") == nil && it.Get("url") == nil) {
			return protocolError{"image response: a data entry has neither b64_json nor url"}
		}
	}
	res.Generated = len(items)
	if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		if n := u.Get("input_tokens"); n != nil && n.Type() == fastjson.TypeNumber {
			res.PromptTokens = n.GetInt()
		} else if n := u.Get("prompt_tokens"); n != nil && n.Type() == fastjson.TypeNumber {
			res.PromptTokens = n.GetInt()
		}
	}
	return nil
}
