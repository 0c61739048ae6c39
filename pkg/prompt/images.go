package prompt

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
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
	// Format is "png" (the default) or "jpeg" (--image-format).
	Format string
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
	if _, err := ParseImageFormat(o.Format); err != nil {
		return err
	}
	return nil
}

// ParseImageFormat checks --image-format: png or jpeg (jpg), "" for png.
func ParseImageFormat(s string) (string, error) {
	switch strings.ToLower(s) {
	case "", "png":
		return "png", nil
	case "jpeg", "jpg":
		return "jpeg", nil
	}
	return "", fmt.Errorf("image format %q: want png or jpeg", s)
}

func (o ImageOptions) withDefaults() ImageOptions {
	if o.Width <= 0 {
		o.Width = 512
	}
	if o.Height <= 0 {
		o.Height = 512
	}
	o.Width, o.Height = min(o.Width, MaxImageSide), min(o.Height, MaxImageSide)
	o.Format, _ = ParseImageFormat(o.Format)
	if o.Format == "" {
		o.Format = "png"
	}
	if o.TokensPerImage <= 0 {
		o.TokensPerImage = DefaultTokensPerImage(o.Width, o.Height)
	}
	return o
}

// DefaultTokensPerImage is the prompt tokens of a w×h image in the
// Qwen2-VL / Qwen2.5-VL family, the most common open multimodal models
// served by vLLM: the image is resized as their processor's smart_resize
// does (each side rounded to a multiple of 28 pixels, half to even as
// Python rounds; scaled up to at least 56×56 = 3,136 pixels or down to at
// most 12,845,056, the models' preprocessor_config.json), one token per
// 28×28 patch (14-pixel patches merged 2×2), plus the two tokens around
// them (<|vision_start|> and <|vision_end|>). 512x512: 18×18 + 2 = 326;
// 32x32: 2×2 + 2 = 6 (LLaVA-1.5 counts 576 whatever the size,
// Phi-3-vision ~ 1,900: set --tokens-per-image for those).
func DefaultTokensPerImage(w, h int) int {
	const factor, minPixels, maxPixels = 28, 56 * 56, 28 * 28 * 16384
	w, h = max(w, 1), max(h, 1)
	hb := max(factor, int(math.RoundToEven(float64(h)/factor))*factor)
	wb := max(factor, int(math.RoundToEven(float64(w)/factor))*factor)
	switch {
	case hb*wb > maxPixels:
		beta := math.Sqrt(float64(h) * float64(w) / maxPixels)
		hb = max(factor, int(math.Floor(float64(h)/beta/factor))*factor)
		wb = max(factor, int(math.Floor(float64(w)/beta/factor))*factor)
	case hb*wb < minPixels:
		beta := math.Sqrt(minPixels / (float64(h) * float64(w)))
		hb = int(math.Ceil(float64(h)*beta/factor)) * factor
		wb = int(math.Ceil(float64(w)*beta/factor)) * factor
	}
	return (hb/factor)*(wb/factor) + VisionMarkerTokens
}

// VisionMarkerTokens are the tokens Qwen2-VL's chat template puts around
// an image's patches (<|vision_start|>, <|vision_end|>).
const VisionMarkerTokens = 2

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
// images, then the audio clip (--audio-seconds).
func (b *Builder) appendMultimodal(dst []byte, a *arrival.Arrival) []byte {
	img := b.images.base()
	audio := a.Audio && b.audio.on()
	text := a.InputTokens - a.Images*b.images.opts.TokensPerImage
	if audio {
		text -= b.audio.tokens()
	}
	text = max(text, 1)
	dst = append(dst, `[{"type":"text","text":"`...)
	dst = b.appendText(dst, a, text)
	dst = append(dst, `"}`...)
	for part := range a.Images {
		dst = append(dst, `,{"type":"image_url","image_url":{"url":"`...)
		dst = img.appendDataURL(dst, b.salt, a.Index, part)
		dst = append(dst, `"}}`...)
	}
	if audio {
		dst = append(dst, `,{"type":"input_audio","input_audio":{"data":"`...)
		dst = b.audio.base().appendBase64(dst, b.salt, a.Index)
		dst = append(dst, `","format":"wav"}}`...)
	}
	return append(dst, ']')
}

// Multimodal reports whether a's prompt has media (images, or the run's
// audio clip): chat content parts, sent as a chat completion whatever the
// backend.
func (b *Builder) Multimodal(a *arrival.Arrival) bool { return a.Images > 0 || a.Audio && b.audio.on() }

// AppendImageDataURL appends the data: URL of image part of request index,
// as the builder sends it.
func (b *Builder) AppendImageDataURL(dst []byte, index int64, part int) []byte {
	return b.images.base().appendDataURL(dst, b.salt, index, part)
}

// PrepareImages builds (and caches) the base picture of o's size now, so
// that the first image request of a run does not pay for it.
func PrepareImages(o ImageOptions) {
	o = o.withDefaults()
	cachedBase(o.Width, o.Height, o.Format)
}

// imageBase is the constant part of every image of one size and format.
type imageBase interface {
	appendDataURL(dst []byte, salt uint64, index int64, part int) []byte
}

// imageSource builds its base picture on first use.
type imageSource struct {
	opts ImageOptions
	once sync.Once
	img  imageBase
}

func (s *imageSource) base() imageBase {
	s.once.Do(func() {
		o := s.opts.withDefaults()
		s.img = cachedBase(o.Width, o.Height, o.Format)
	})
	return s.img
}

// Base pictures are shared by every builder: they depend on the size and
// format only.
type baseKey struct {
	w, h   int
	format string
}

var (
	basesMu sync.Mutex
	bases   = map[baseKey]imageBase{}
)

func cachedBase(w, h int, format string) imageBase {
	basesMu.Lock()
	defer basesMu.Unlock()
	k := baseKey{w, h, format}
	if b := bases[k]; b != nil {
		return b
	}
	var b imageBase
	if format == "jpeg" {
		b = newJPEGBase(w, h)
	} else {
		b = newPNGBase(w, h)
	}
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
