package prompt

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"sync"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// Multimodal prompts (Azure LMM traces): an arrival with N > 0 images is
// sent as chat content parts, a text part sized so that
//
//	text tokens + N × TokensPerImage ≈ InputTokens
//
// followed by N synthetic PNG images sent as data: URLs. Every image is
// different (its pixels depend on the run's salt, the request index and the
// part number), so a server's multimodal cache never serves one request's
// image to another, and the same run salt gives the same bytes.
//
// Encoding a fresh 512x512 PNG per image would cost milliseconds of CPU; the
// builder instead compresses a base picture once per size and makes each
// image unique by its last row of pixels, written as an uncompressed deflate
// block after the cached compressed rows. The PNG stays valid (zlib's
// Adler-32 and the chunk's CRC-32 are carried on from the cached prefix),
// and the cached prefix is kept already base64-encoded, so an image costs
// one row of pixels and a few kilobytes of base64.

// ImageOptions sizes synthetic images.
type ImageOptions struct {
	// Width and Height in pixels (default 512x512).
	Width, Height int
	// TokensPerImage is what one image counts for in the prompt (default
	// DefaultTokensPerImage of the size).
	TokensPerImage int
}

// MaxImageSide bounds an image's width and height.
const MaxImageSide = 8192

// Validate reports a size no image can have.
func (o ImageOptions) Validate() error {
	if o.Width < 0 || o.Height < 0 || o.Width > MaxImageSide || o.Height > MaxImageSide {
		return fmt.Errorf("image size %dx%d: want 1–%d pixels a side", o.Width, o.Height, MaxImageSide)
	}
	if o.TokensPerImage < 0 {
		return fmt.Errorf("tokens per image %d: want ≥ 0", o.TokensPerImage)
	}
	return nil
}

func (o ImageOptions) withDefaults() ImageOptions {
	if o.Width <= 0 {
		o.Width = 512
	}
	if o.Height <= 0 {
		o.Height = 512
	}
	o.Width, o.Height = min(o.Width, MaxImageSide), min(o.Height, MaxImageSide)
	if o.TokensPerImage <= 0 {
		o.TokensPerImage = DefaultTokensPerImage(o.Width, o.Height)
	}
	return o
}

// DefaultTokensPerImage is the prompt tokens of a w×h image in the
// Qwen2-VL / Qwen2.5-VL family, the most common open multimodal models
// served by vLLM: one token per 28×28-pixel patch (14-pixel patches merged
// 2×2), each side rounded to a whole number of patches. 512x512 gives
// 18×18 = 324 tokens (LLaVA-1.5 would count 576, Phi-3-vision ~ 1,900:
// set --tokens-per-image for those).
func DefaultTokensPerImage(w, h int) int {
	side := func(n int) int { return max(1, (n+14)/28) }
	return side(w) * side(h)
}

// ParseImageSize parses "WxH" (e.g. 512x512).
func ParseImageSize(s string) (w, h int, err error) {
	a, b, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	if ok {
		w, err = strconv.Atoi(strings.TrimSpace(a))
		if err == nil {
			h, err = strconv.Atoi(strings.TrimSpace(b))
		}
	}
	if !ok || err != nil || w < 1 || h < 1 || w > MaxImageSide || h > MaxImageSide {
		return 0, 0, fmt.Errorf("image size %q: want WxH with 1–%d pixels a side, e.g. 512x512", s, MaxImageSide)
	}
	return w, h, nil
}

// TextTokens is how many text tokens go with n images in a prompt of
// total tokens (at least 1).
func (o ImageOptions) TextTokens(total, n int) int {
	return max(total-n*o.withDefaults().TokensPerImage, 1)
}

// appendMultimodal writes a's chat content parts: the text, then a.Images
// images.
func (b *Builder) appendMultimodal(dst []byte, a *arrival.Arrival) []byte {
	img := b.images.base()
	dst = append(dst, `[{"type":"text","text":"`...)
	dst = b.appendText(dst, a, b.images.opts.TextTokens(a.InputTokens, a.Images))
	dst = append(dst, `"}`...)
	for part := range a.Images {
		dst = append(dst, `,{"type":"image_url","image_url":{"url":"`...)
		dst = img.appendDataURL(dst, b.salt, a.Index, part)
		dst = append(dst, `"}}`...)
	}
	return append(dst, ']')
}

// AppendImageDataURL appends the data: URL of image part of request index,
// as the builder sends it.
func (b *Builder) AppendImageDataURL(dst []byte, index int64, part int) []byte {
	return b.images.base().appendDataURL(dst, b.salt, index, part)
}

// PrepareImages builds (and caches) the base picture of o's size now, so
// that the first image request of a run does not pay for it.
func PrepareImages(o ImageOptions) {
	o = o.withDefaults()
	cachedBase(o.Width, o.Height)
}

// imageSource builds its base picture on first use.
type imageSource struct {
	opts ImageOptions
	once sync.Once
	img  *pngBase
}

func (s *imageSource) base() *pngBase {
	s.once.Do(func() {
		o := s.opts.withDefaults()
		s.img = cachedBase(o.Width, o.Height)
	})
	return s.img
}

// Base pictures are shared by every builder: they depend on the size only.
var (
	basesMu sync.Mutex
	bases   = map[[2]int]*pngBase{}
)

func cachedBase(w, h int) *pngBase {
	basesMu.Lock()
	defer basesMu.Unlock()
	k := [2]int{w, h}
	if b := bases[k]; b != nil {
		return b
	}
	b := newPNGBase(w, h)
	bases[k] = b
	return b
}

// pngBase is the constant part of every image of one size: a PNG up to
// the last row of pixels, whose deflate stream ends on a byte boundary.
type pngBase struct {
	w, h     int
	prefix64 []byte // "data:image/png;base64," + base64 of the prefix (a multiple of 3 bytes)
	adler    uint32 // Adler-32 of the uncompressed rows before the last
	crc      uint32 // CRC-32 of the IDAT chunk so far
}

const dataURLHead = "data:image/png;base64,"

// pngIEND is the final chunk of every PNG.
var pngIEND = []byte{0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82}

func newPNGBase(w, h int) *pngBase {
	var png bytes.Buffer
	png.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB, default compression, filter and interlace
	writeChunk(&png, "IHDR", ihdr)

	// Rows 0..h-2: a smooth gradient, each row after the first filtered
	// as the difference from the row above ("Up"), which compresses to
	// almost nothing.
	var z bytes.Buffer
	fw, _ := flate.NewWriter(&z, flate.BestCompression)
	row := make([]byte, 1+3*w)
	prev := make([]byte, 1+3*w)
	filtered := make([]byte, 1+3*w)
	adler := uint32(1)
	for y := 0; y < h-1; y++ {
		for x := 0; x < w; x++ {
			p := row[1+3*x:]
			p[0] = byte(x * 255 / max(w-1, 1))
			p[1] = byte(y * 255 / max(h-1, 1))
			p[2] = byte((x + y) * 255 / max(w+h-2, 1))
		}
		copy(filtered, row)
		if y > 0 {
			filtered[0] = 2 // filter: up
			for i := 1; i < len(row); i++ {
				filtered[i] = row[i] - prev[i]
			}
		}
		fw.Write(filtered)
		adler = adler32Update(adler, filtered)
		row, prev = prev, row
	}
	fw.Flush() // a sync flush: the stream so far ends on a byte boundary, not final
	deflated := z.Bytes()

	rowLen := 1 + 3*w
	idatLen := 2 + len(deflated) + 5 + rowLen + 4
	// Pad with a tEXt chunk so that the prefix is a multiple of 3 bytes and
	// its base64 can be cached and continued.
	text := []byte("Software\x00fineserve-gen")
	for (png.Len()+12+len(text)+8+2+len(deflated))%3 != 0 {
		text = append(text, ' ')
	}
	writeChunk(&png, "tEXt", text)
	var head [8]byte
	binary.BigEndian.PutUint32(head[:], uint32(idatLen))
	copy(head[4:], "IDAT")
	png.Write(head[:])
	zhead := []byte{0x78, 0x01} // zlib: deflate, 32 KiB window, fastest
	png.Write(zhead)
	png.Write(deflated)
	crc := crc32.ChecksumIEEE([]byte("IDAT"))
	crc = crc32.Update(crc, crc32.IEEETable, zhead)
	crc = crc32.Update(crc, crc32.IEEETable, deflated)

	prefix64 := make([]byte, 0, len(dataURLHead)+base64.StdEncoding.EncodedLen(png.Len()))
	prefix64 = append(prefix64, dataURLHead...)
	prefix64 = base64.StdEncoding.AppendEncode(prefix64, png.Bytes())
	return &pngBase{w: w, h: h, prefix64: prefix64, adler: adler, crc: crc}
}

func writeChunk(b *bytes.Buffer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	b.Write(n[:])
	b.WriteString(typ)
	b.Write(data)
	crc := crc32.ChecksumIEEE([]byte(typ))
	crc = crc32.Update(crc, crc32.IEEETable, data)
	binary.BigEndian.PutUint32(n[:], crc)
	b.Write(n[:])
}

// adler32Update continues an Adler-32 checksum over p.
func adler32Update(adler uint32, p []byte) uint32 {
	const mod = 65521
	s1, s2 := adler&0xffff, adler>>16
	for len(p) > 0 {
		n := min(len(p), 5552) // the largest run without overflow
		for _, c := range p[:n] {
			s1 += uint32(c)
			s2 += s1
		}
		s1 %= mod
		s2 %= mod
		p = p[n:]
	}
	return s2<<16 | s1
}

// tailPool recycles the per-image tail buffers.
var tailPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// appendDataURL appends the data: URL of the image of (salt, index, part):
// the cached prefix, then the last row (unique pixels) as a final stored
// deflate block, the checksums and the end chunk.
func (p *pngBase) appendDataURL(dst []byte, salt uint64, index int64, part int) []byte {
	bp := tailPool.Get().(*[]byte)
	tail := (*bp)[:0]
	rowLen := 1 + 3*p.w
	tail = append(tail, 0x01, byte(rowLen), byte(rowLen>>8), ^byte(rowLen), ^byte(rowLen>>8))
	start := len(tail)
	tail = append(tail, 0) // filter: none
	seed := mix(salt, 0x1a6e^uint64(part)<<16, uint64(index))
	for len(tail)-start < rowLen {
		v := splitmix(&seed)
		for k := 0; k < 8 && len(tail)-start < rowLen; k++ {
			tail = append(tail, byte(v>>(8*k)))
		}
	}
	adler := adler32Update(p.adler, tail[start:])
	tail = binary.BigEndian.AppendUint32(tail, adler)
	crc := crc32.Update(p.crc, crc32.IEEETable, tail)
	tail = binary.BigEndian.AppendUint32(tail, crc)
	tail = append(tail, pngIEND...)

	dst = append(dst, p.prefix64...)
	dst = base64.StdEncoding.AppendEncode(dst, tail)
	*bp = tail[:0]
	tailPool.Put(bp)
	return dst
}
