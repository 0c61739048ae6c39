package mockserver

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"image"
	_ "image/jpeg" // image.DecodeConfig reads JPEG headers
	_ "image/png"  // and PNG headers
	"io"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
)

// Media in chat content is counted as a Qwen2-VL / Qwen2-Audio server
// counts it: an image by its size (prompt.DefaultTokensPerImage: 28×28
// patches after smart_resize, plus the vision start and end tokens), read
// from its data: URL's header, unless Config.TokensPerImage fixes a
// count; an audio clip (input_audio, or an audio_url data: URL) of WAV
// data by its length, Config.AudioTokensPerSecond (default 25) a second
// plus 2 (prompt.AudioTokens). An image that is not a PNG or JPEG data:
// URL counts as 512x512; audio that is not WAV data is refused (400).

// imageURL returns an image part's URL (image_url.url, or a Responses
// input_image's image_url string).
func imageURL(part *fastjson.Value) []byte {
	if u := part.GetStringBytes("image_url", "url"); u != nil {
		return u
	}
	return part.GetStringBytes("image_url")
}

// imageTokens is what the image at url counts for.
func (s *Server) imageTokens(url []byte) int {
	if s.cfg.TokensPerImage > 0 {
		return s.cfg.TokensPerImage
	}
	w, h, ok := imageSize(url)
	if !ok {
		w, h = 512, 512
	}
	return prompt.DefaultTokensPerImage(w, h)
}

// imageSize reads the size of a data: URL's PNG or JPEG image.
func imageSize(url []byte) (w, h int, ok bool) {
	if !bytes.HasPrefix(url, []byte("data:image/")) {
		return 0, 0, false
	}
	_, b64, found := bytes.Cut(url, []byte(";base64,"))
	if !found {
		return 0, 0, false
	}
	cfg, _, err := image.DecodeConfig(base64.NewDecoder(base64.StdEncoding, bytes.NewReader(b64)))
	if err != nil {
		return 0, 0, false
	}
	return cfg.Width, cfg.Height, true
}

var errNotWAV = errors.New("not a WAV (RIFF/WAVE, PCM): the built-in server reads WAV audio only")

// audioTokens is what an audio part counts for: its WAV clip's seconds.
func (s *Server) audioTokens(part *fastjson.Value) (int, error) {
	var b64 []byte
	switch string(part.GetStringBytes("type")) {
	case "input_audio":
		if f := part.GetStringBytes("input_audio", "format"); f != nil && string(f) != "wav" {
			return 0, errNotWAV
		}
		b64 = part.GetStringBytes("input_audio", "data")
	default: // audio_url
		url := part.GetStringBytes("audio_url", "url")
		_, data, ok := bytes.Cut(url, []byte(";base64,"))
		if !ok || !bytes.HasPrefix(url, []byte("data:audio/")) {
			return 0, errNotWAV
		}
		b64 = data
	}
	secs, err := wavSeconds(b64)
	if err != nil {
		return 0, err
	}
	return prompt.AudioTokens(secs, s.cfg.AudioTokensPerSecond), nil
}

// wavSeconds is the length of the base64 WAV data b64 (an input_audio
// part).
func wavSeconds(b64 []byte) (float64, error) {
	return wavLength(base64.NewDecoder(base64.StdEncoding, bytes.NewReader(b64)), base64.StdEncoding.DecodedLen(len(b64)))
}

// wavLength is the length of the WAV read from r (total bytes at most):
// its data chunk's bytes (at most those present) over the fmt chunk's
// byte rate.
func wavLength(r io.Reader, total int) (float64, error) {
	var head [12]byte
	if _, err := io.ReadFull(r, head[:]); err != nil || string(head[:4]) != "RIFF" || string(head[8:]) != "WAVE" {
		return 0, errNotWAV
	}
	read := 12
	byteRate := 0
	for range 64 { // chunks before the data
		var ch [8]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			return 0, errNotWAV
		}
		read += 8
		size := int(binary.LittleEndian.Uint32(ch[4:]))
		switch string(ch[:4]) {
		case "fmt ":
			if size < 16 || size > 1<<10 {
				return 0, errNotWAV
			}
			f := make([]byte, size)
			if _, err := io.ReadFull(r, f); err != nil {
				return 0, errNotWAV
			}
			read += size
			byteRate = int(binary.LittleEndian.Uint32(f[8:]))
		case "data":
			if byteRate <= 0 {
				return 0, errNotWAV
			}
			size = min(size, total-read)
			return float64(max(size, 0)) / float64(byteRate), nil
		default:
			if _, err := io.CopyN(io.Discard, r, int64(size)); err != nil {
				return 0, errNotWAV
			}
			read += size
		}
	}
	return 0, errNotWAV
}
