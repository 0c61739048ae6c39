package mockserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
)

// The server counts the client's media as the client sized them: images
// by their size (Qwen2-VL's count, PNG or JPEG), WAV clips by their
// length; so usage.prompt_tokens is each request's input length.
func TestMediaTokens(t *testing.T) {
	_, url := start(t, Config{})
	for _, o := range []prompt.Options{
		{Salt: 1, Images: prompt.ImageOptions{Width: 640, Height: 480}},
		{Salt: 1, Images: prompt.ImageOptions{Width: 32, Height: 900, Format: "jpeg"}},
		{Salt: 1, Audio: prompt.AudioOptions{Seconds: 2.5}},
		{Salt: 1, Images: prompt.ImageOptions{Width: 100, Height: 100, Format: "jpeg"}, Audio: prompt.AudioOptions{Seconds: 0.3}},
	} {
		b := prompt.New(o)
		for _, imgs := range []int{0, 1, 3} {
			a := arrival.Arrival{Index: 4, InputTokens: 3000, Images: imgs, Audio: o.Audio.Seconds > 0}
			if !b.Multimodal(&a) {
				continue
			}
			body := `{"messages":[{"role":"user","content":` + string(b.Append(nil, &a)) + `}],"max_tokens":1}`
			r := post(t, url, "/v1/chat/completions", body)
			var out struct {
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
				} `json:"usage"`
			}
			json.Unmarshal([]byte(r.body), &out)
			if out.Usage.PromptTokens != 3000 {
				t.Errorf("%+v, %d images: prompt_tokens %d, want 3000 (%.200s)", o, imgs, out.Usage.PromptTokens, r.body)
			}
		}
	}
	for _, bad := range []string{
		`{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}`,
		`{"type":"input_audio","input_audio":{"data":"UklGRiQAAABXQVZF","format":"mp3"}}`,
		`{"type":"audio_url","audio_url":{"url":"https://example.invalid/a.wav"}}`,
	} {
		r := post(t, url, "/v1/chat/completions", `{"messages":[{"role":"user","content":[`+bad+`]}],"max_tokens":1}`)
		if r.status != 400 || !strings.Contains(r.body, "WAV") {
			t.Errorf("%s: %d %s, want a 400 about WAV", bad, r.status, r.body)
		}
	}
	// A fixed count wins over the size.
	_, fixed := start(t, Config{TokensPerImage: 7})
	b := prompt.New(prompt.Options{Images: prompt.ImageOptions{TokensPerImage: 7}})
	a := arrival.Arrival{InputTokens: 100, Images: 2}
	r := post(t, fixed, "/v1/chat/completions", `{"messages":[{"role":"user","content":`+string(b.Append(nil, &a))+`}],"max_tokens":1}`)
	if !strings.Contains(r.body, `"prompt_tokens":100`) {
		t.Errorf("fixed tokens per image: %.300s", r.body)
	}
}
