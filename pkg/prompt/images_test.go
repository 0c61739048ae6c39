package prompt

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// decodeDataURL decodes the image of a data URL, head (dataURLHead,
// jpegURLHead) and base64 data, with decode (png.Decode, jpeg.Decode).
func decodeDataURL(t *testing.T, url, head string, decode func(io.Reader) (image.Image, error)) image.Image {
	t.Helper()
	b64, ok := strings.CutPrefix(url, head)
	if !ok {
		t.Fatalf("not a %s data URL: %.40q", head, url)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("base64: %v", err)
	}
	img, err := decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", head, err)
	}
	return img
}

func lastRow(img image.Image) []uint32 {
	b := img.Bounds()
	var out []uint32
	for x := b.Min.X; x < b.Max.X; x++ {
		r, g, bl, _ := img.At(x, b.Max.Y-1).RGBA()
		out = append(out, r<<16^g<<8^bl)
	}
	return out
}

func TestImagesDecodeAndDiffer(t *testing.T) {
	for _, size := range [][2]int{{512, 512}, {1, 1}, {3, 7}, {640, 480}, {33, 2}} {
		b := New(Options{Salt: 7, Images: ImageOptions{Width: size[0], Height: size[1]}})
		seen := map[string]bool{}
		for _, k := range [][2]int{{0, 0}, {0, 1}, {1, 0}, {12345, 3}} {
			url := string(b.AppendImageDataURL(nil, int64(k[0]), k[1]))
			img := decodeDataURL(t, url, dataURLHead, png.Decode)
			if got := img.Bounds().Size(); got.X != size[0] || got.Y != size[1] {
				t.Fatalf("%v: decoded size %v", size, got)
			}
			key := string(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("", 0)))) + func() string {
				s, _ := json.Marshal(lastRow(img))
				return string(s)
			}()
			if size[0]*3 >= 8 && seen[key] { // rows of ≥ 8 bytes: collisions are negligible
				t.Errorf("%v: image %v has the pixels of an earlier one", size, k)
			}
			seen[key] = true
			if again := string(b.AppendImageDataURL(nil, int64(k[0]), k[1])); again != url {
				t.Errorf("%v: image %v is not deterministic", size, k)
			}
		}
	}
}

func TestMultimodalContent(t *testing.T) {
	o := ImageOptions{Width: 64, Height: 32, TokensPerImage: 100}
	b := New(Options{Salt: 1, Images: o})
	for _, c := range []struct {
		name          string
		input, images int
		wantText      int
	}{
		{"fits", 949, 1, 849},
		{"clamped", 150, 2, 1},
		{"many", 5000, 16, 3400},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := arrival.Arrival{Index: 9, InputTokens: c.input, OutputTokens: 5, Images: c.images}
			raw := b.Append(nil, &a)
			parts := decode[[]part](t, raw)
			if len(parts) != 1+c.images || parts[0].Type != "text" {
				t.Fatalf("got %d parts (first %q), want text + %d images", len(parts), parts[0].Type, c.images)
			}
			if n := len(strings.Fields(parts[0].Text)); n != c.wantText {
				t.Errorf("text has %d words, want %d", n, c.wantText)
			}
			for _, p := range parts[1:] {
				if p.Type != "image_url" {
					t.Fatalf("part type %q", p.Type)
				}
				decodeDataURL(t, p.ImageURL.URL, dataURLHead, png.Decode)
			}
		})
	}
}

func TestDefaultTokensPerImage(t *testing.T) {
	// Qwen2-VL's smart_resize: each side rounded to 28 (half to even),
	// at least 3,136 pixels, at most 12,845,056; plus 2 marker tokens.
	for _, c := range []struct{ w, h, want int }{{512, 512, 18*18 + 2}, {28, 28, 2*2 + 2}, {1, 1, 2*2 + 2}, {1024, 768, 37*27 + 2},
		{70, 70, 2*2 + 2} /* 2.5 rounds to 2 */, {98, 98, 4*4 + 2} /* 3.5 rounds to 4 */, {8192, 8192, 128*128 + 2}, {3584, 3584, 128*128 + 2}} {
		if got := DefaultTokensPerImage(c.w, c.h); got != c.want {
			t.Errorf("DefaultTokensPerImage(%d, %d) = %d, want %d", c.w, c.h, got, c.want)
		}
	}
}

func BenchmarkImageDataURL(b *testing.B) { benchmarkDataURL(b, ImageOptions{}) }

// benchmarkDataURL measures writing the data URLs of images of opts.
func benchmarkDataURL(b *testing.B, opts ImageOptions) {
	bl := New(Options{Salt: 1, Images: opts})
	bl.AppendImageDataURL(nil, 0, 0)
	var dst []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		dst = bl.AppendImageDataURL(dst[:0], int64(i), 0)
	}
	b.SetBytes(int64(len(dst)))
}
