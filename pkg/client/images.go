package client

import (
	"errors"
	"fmt"
	"io"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/internal/bounded"
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
	n, steps, neg := 1, 0, 0
	var loras, cnets []string
	if g := req.Gen; g != nil {
		n, steps, neg = max(g.Images, 1), g.Steps, g.NegativeTokens
		loras, cnets = g.LoRAs, g.ControlNets
	}
	o := c.openModelBody(b, req)
	if o.member("prompt") {
		o.b = req.appendPrompt(o.b)
	}
	if o.member("n") {
		o.b = appendInt(o.b, n)
	}
	if c.cfg.ImageSize != "" && o.member("size") {
		o.b = appendJSONString(o.b, c.cfg.ImageSize)
	}
	if steps > 0 && o.member("num_inference_steps") {
		o.b = appendInt(o.b, steps)
	}
	if neg > 0 && o.member("negative_prompt") {
		o.b = append(o.b, '"')
		for i := range neg {
			if i > 0 {
				o.b = append(o.b, ' ')
			}
			o.b = append(o.b, negativeWords[i%len(negativeWords)]...)
		}
		o.b = append(o.b, '"')
	}
	if len(loras) > 0 && o.member("loras") {
		o.b = appendStrings(o.b, loras)
	}
	if len(cnets) > 0 && o.member("controlnets") {
		o.b = appendStrings(o.b, cnets)
	}
	return c.closeBody(&o)
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
	raw, err := bounded.Read(body, maxImageResponse)
	res.End = c.since()
	var tl *bounded.TooLarge
	if errors.As(err, &tl) {
		return protocolError{"image response " + err.Error()}
	}
	if err != nil {
		return err
	}
	v, err := d.parse(raw)
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
