package prompt

import (
	"encoding/base64"
	"encoding/binary"
	"image"
	"image/jpeg"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// pixels is an image's pixels, for comparing two images.
func pixels(img image.Image) string {
	var b strings.Builder
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c0, c1, c2, _ := img.At(x, y).RGBA()
			b.WriteByte(byte(c0 >> 8))
			b.WriteByte(byte(c1 >> 8))
			b.WriteByte(byte(c2 >> 8))
		}
	}
	return b.String()
}

// JPEG images decode at their size, differ in pixels from request to
// request and part to part, and are the same bytes for the same salt.
func TestJPEGImages(t *testing.T) {
	for _, size := range [][2]int{{512, 512}, {1, 1}, {33, 17}, {640, 480}} {
		o := ImageOptions{Width: size[0], Height: size[1], Format: "jpeg"}
		b, again := New(Options{Salt: 7, Images: o}), New(Options{Salt: 7, Images: o})
		other := New(Options{Salt: 8, Images: o})
		seen := map[string][2]int{}
		for _, k := range [][2]int{{0, 0}, {0, 1}, {1, 0}, {12345, 3}} {
			url := string(b.AppendImageDataURL(nil, int64(k[0]), k[1]))
			img := decodeDataURL(t, url, jpegURLHead, jpeg.Decode)
			if got := img.Bounds().Size(); got.X != size[0] || got.Y != size[1] {
				t.Fatalf("%v: decoded size %v", size, got)
			}
			px := pixels(img)
			if prev, dup := seen[px]; dup && size[0]*size[1] >= 64 { // a few pixels may clip alike
				t.Errorf("%v: image %v has the pixels of %v", size, k, prev)
			}
			seen[px] = k
			if string(again.AppendImageDataURL(nil, int64(k[0]), k[1])) != url {
				t.Errorf("%v: image %v is not the same bytes for the same salt", size, k)
			}
			if string(other.AppendImageDataURL(nil, int64(k[0]), k[1])) == url {
				t.Errorf("%v: image %v is the same for another salt", size, k)
			}
		}
	}
	if _, err := ParseImageFormat("gif"); err == nil {
		t.Error("gif accepted")
	}
}

// wavOf decodes a base64 WAV clip: its sample rate, byte rate and samples.
func wavOf(t *testing.T, b64 string) (rate, byteRate int, samples []int16) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 44 || string(raw[:4]) != "RIFF" || string(raw[8:16]) != "WAVEfmt " || string(raw[36:40]) != "data" {
		t.Fatalf("not a WAV header: %q", raw[:min(44, len(raw))])
	}
	if int(binary.LittleEndian.Uint32(raw[4:])) != len(raw)-8 || int(binary.LittleEndian.Uint32(raw[40:])) != len(raw)-44 {
		t.Fatalf("RIFF size %d, data size %d for %d bytes", binary.LittleEndian.Uint32(raw[4:]), binary.LittleEndian.Uint32(raw[40:]), len(raw))
	}
	for i := 44; i+1 < len(raw); i += 2 {
		samples = append(samples, int16(binary.LittleEndian.Uint16(raw[i:])))
	}
	return int(binary.LittleEndian.Uint32(raw[24:])), int(binary.LittleEndian.Uint32(raw[28:])), samples
}

// part is a part of a message's content (text, an image or audio).
type part struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL struct {
		URL string `json:"url"`
	} `json:"image_url"`
	InputAudio struct {
		Data   string `json:"data"`
		Format string `json:"format"`
	} `json:"input_audio"`
}

// Every request gets one WAV clip of the asked length, its samples its
// own, the same for the same salt; its tokens come off the text.
func TestAudioClip(t *testing.T) {
	for _, secs := range []float64{0.001, 0.5, 1.5, 30} {
		o := Options{Salt: 3, Audio: AudioOptions{Seconds: secs}, Images: ImageOptions{Width: 56, Height: 56}}
		b, again := New(o), New(o)
		seen := map[string]int64{}
		for idx := range int64(4) {
			a := arrival.Arrival{Index: idx, InputTokens: 2000, Images: int(idx % 2), Audio: true}
			if !b.Multimodal(&a) {
				t.Fatal("an audio run's request is not multimodal")
			}
			raw := b.Append(nil, &a)
			ps := decode[[]part](t, raw)
			if len(ps) != 2+a.Images || ps[0].Type != "text" || ps[len(ps)-1].Type != "input_audio" || ps[len(ps)-1].InputAudio.Format != "wav" {
				t.Fatalf("%g s: parts %d: want text, %d images, input_audio", secs, len(ps), a.Images)
			}
			audio := ps[len(ps)-1].InputAudio.Data
			rate, byteRate, samples := wavOf(t, audio)
			if rate != AudioSampleRate || byteRate != 2*AudioSampleRate || len(samples) != max(int(secs*AudioSampleRate+0.5), 1) {
				t.Errorf("%g s: %d Hz, %d B/s, %d samples", secs, rate, byteRate, len(samples))
			}
			if prev, dup := seen[audio]; dup {
				t.Errorf("%g s: request %d's clip is request %d's", secs, idx, prev)
			}
			seen[audio] = idx
			if string(again.Append(nil, &a)) != string(raw) {
				t.Errorf("%g s: request %d is not the same bytes for the same salt", secs, idx)
			}
			want := 2000 - AudioTokens(secs, 0) - a.Images*DefaultTokensPerImage(56, 56)
			if n := len(strings.Fields(ps[0].Text)); n != want {
				t.Errorf("%g s, %d images: text of %d words, want %d", secs, a.Images, n, want)
			}
		}
	}
	// A session's later turn (no Audio) is plain text.
	b := New(Options{Audio: AudioOptions{Seconds: 1}})
	later := arrival.Arrival{Index: 1, InputTokens: 10}
	if b.Multimodal(&later) || strings.Contains(string(b.Append(nil, &later)), "input_audio") {
		t.Error("an arrival without Audio got the clip")
	}
	if got := AudioTokens(1.5, 0); got != 38+2 {
		t.Errorf("1.5 s: %d tokens, want 40 (25 a second, rounded up, + 2)", got)
	}
	for _, bad := range []AudioOptions{{Seconds: 1e6}, {Seconds: -1}, {Seconds: 1, TokensPerSecond: -2}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func BenchmarkJPEGDataURL(b *testing.B) { benchmarkDataURL(b, ImageOptions{Format: "jpeg"}) }

func BenchmarkAudioClip(b *testing.B) {
	bl := New(Options{Salt: 1, Audio: AudioOptions{Seconds: 10}})
	a := arrival.Arrival{InputTokens: 1000, Audio: true}
	var dst []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		a.Index = int64(i)
		dst = bl.Append(dst[:0], &a)
	}
	b.SetBytes(int64(len(dst)))
}
