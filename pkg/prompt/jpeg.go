package prompt

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/jpeg"
)

// JPEG images (--image-format jpeg) are encoded once per size; each image
// is made unique by its quantization tables: six of their entries (the DC
// and the two lowest AC coefficients of the luma and chroma tables) are
// derived from the run's salt, the request index and the part number.
// The entropy-coded data is unchanged, but every decoded pixel depends on
// the DC entries, so a server's multimodal cache (which hashes pixels)
// never serves one request's image to another. An image costs the base64
// of the file's first bytes; the rest is cached, already encoded.

const jpegURLHead = "data:image/jpeg;base64,"

// jpegBase is the encoded picture of one size, its head (through the
// quantization tables, a multiple of 3 bytes) and the base64 of the rest.
type jpegBase struct {
	head   []byte
	dqt    [6]int // offsets in head of the entries varied per image
	rest64 []byte
}

// gradient is the synthetic picture, computed pixel by pixel (no buffer:
// an 8192x8192 image would need 256 MiB).
type gradient struct{ w, h int }

func (g gradient) ColorModel() color.Model { return color.RGBAModel }
func (g gradient) Bounds() image.Rectangle { return image.Rect(0, 0, g.w, g.h) }
func (g gradient) At(x, y int) color.Color {
	return color.RGBA{byte(x * 255 / max(g.w-1, 1)), byte(y * 255 / max(g.h-1, 1)), byte((x + y) * 255 / max(g.w+g.h-2, 1)), 255}
}

func newJPEGBase(w, h int) *jpegBase {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, gradient{w, h}, &jpeg.Options{Quality: 90}); err != nil {
		panic(err) // writing to memory cannot fail
	}
	b := buf.Bytes()
	// The DQT segment: FF DB, its length, then tables of 1 + 64 bytes
	// (precision and id, then the entries in zigzag order).
	i := bytes.Index(b, []byte{0xff, 0xdb})
	if i < 0 {
		panic("image/jpeg wrote no quantization table")
	}
	seg := int(b[i+2])<<8 | int(b[i+3])
	var dqt [6]int
	t := i + 4
	for k := 0; k < 2 && t+65 <= i+2+seg; k++ {
		for j := range 3 {
			dqt[3*k+j] = t + 1 + j
		}
		t += 65
	}
	if dqt[3] == 0 { // one table only: vary three more of its entries
		for j := range 3 {
			dqt[3+j] = dqt[0] + 8 + j
		}
	}
	n := (i + 2 + seg + 2) / 3 * 3
	return &jpegBase{head: b[:n:n], dqt: dqt, rest64: base64.StdEncoding.AppendEncode([]byte(nil), b[n:])}
}

func (p *jpegBase) appendDataURL(dst []byte, salt uint64, index int64, part int) []byte {
	var head [512]byte
	hd := append(head[:0], p.head...)
	seed := mix(salt, 0x1a6e^uint64(part)<<16, uint64(index))
	v := splitmix(&seed)
	for k, off := range p.dqt {
		hd[off] = byte(1 + (v>>(8*k))%96) // 1–96: valid 8-bit entries
	}
	dst = append(dst, jpegURLHead...)
	dst = base64.StdEncoding.AppendEncode(dst, hd)
	return append(dst, p.rest64...)
}
