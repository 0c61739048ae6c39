// Package prompt turns an arrival's target sizes into the prompt a request
// carries: token-id lists of exact length, synthetic text, or real dataset
// text trimmed or repeated to length, with prefix blocks that reproduce a
// trace's cache reuse.
package prompt

import (
	"fmt"
	"math/bits"
	"strconv"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// Format is how a completion prompt is written.
type Format int

const (
	// TokenIDs sends the prompt as a list of token ids: its length in
	// tokens is exact whatever the server's tokenizer.
	TokenIDs Format = iota
	// Text sends synthetic words, each a single token in common tokenizers.
	Text
)

// ParseFormat parses --prompt-format.
func ParseFormat(s string) (Format, error) {
	switch s {
	case "token-ids", "tokens", "ids":
		return TokenIDs, nil
	case "text":
		return Text, nil
	}
	return 0, fmt.Errorf("prompt format %q: want token-ids or text", s)
}

// BlockTokens is the size of one prefix block (Mooncake's hash_ids).
const BlockTokens = 512

// Builder builds prompts. It is safe for concurrent use once built.
type Builder struct {
	format  Format
	chat    bool
	salt    uint64
	block   int
	suffix  string
	dataset *Dataset
	prefix  *SharedPrefix
	ids     pool // pre-encoded token ids: `123,456,…`
	words   pool // pre-encoded words: ` the of …`
	images  imageSource
}

// Options configures a Builder.
type Options struct {
	// Format applies to completions; chat always sends text.
	Format Format
	// Chat makes the builder write chat message content.
	Chat bool
	// Salt makes this run's prompts differ from another run's, so a server's
	// prefix cache does not serve one run from the last. Equal prefix block
	// ids still give equal blocks within (and across runs with) one salt.
	Salt uint64
	// Suffix is appended to text prompts (--prompt-suffix).
	Suffix string
	// Dataset, when set, supplies real prompt text (forces text).
	Dataset *Dataset
	// Images sizes the synthetic images of arrivals with Images > 0 (see
	// images.go); the zero value is 512x512 with DefaultTokensPerImage.
	Images ImageOptions
	// Prefix, when set, starts every prompt without prefix blocks with one
	// of its shared prefixes (see SharedPrefix).
	Prefix *SharedPrefix
	// BlockTokens is the tokens of one prefix block (0: BlockTokens,
	// Mooncake's 512; agentic traces say theirs).
	BlockTokens int
}

// New returns a Builder for o.
func New(o Options) *Builder {
	b := &Builder{format: o.Format, chat: o.Chat, salt: o.Salt, suffix: o.Suffix, dataset: o.Dataset, prefix: o.Prefix, block: o.BlockTokens}
	if b.block <= 0 {
		b.block = BlockTokens
	}
	b.images.opts = o.Images.withDefaults()
	if o.Chat || o.Dataset != nil {
		b.format = Text
	}
	b.ids = newPool(o.Salt, func(v uint64) []byte { return strconv.AppendUint(nil, tokenID(v), 10) }, ',')
	b.words = newPool(o.Salt, func(v uint64) []byte { return []byte(vocabulary[v%uint64(len(vocabulary))]) }, ' ')
	return b
}

// Format is the prompt format in use.
func (b *Builder) Format() Format { return b.format }

// Append appends the JSON prompt value for a: the "prompt" of a completion
// or the "content" of a chat message. An arrival with images gets chat
// content parts (text, then its images: see images.go), to be sent as a
// chat completion whatever the backend.
func (b *Builder) Append(dst []byte, a *arrival.Arrival) []byte {
	if a.Images > 0 {
		return b.appendMultimodal(dst, a)
	}
	n := max(a.InputTokens, 1)
	if b.format == TokenIDs {
		dst = append(dst, '[')
		dst = b.appendBody(dst, &b.ids, a, n)
		return append(dst, ']')
	}
	dst = append(dst, '"')
	dst = b.appendText(dst, a, n)
	return append(dst, '"')
}

// appendText writes n tokens of text for a, escaped for a JSON string.
func (b *Builder) appendText(dst []byte, a *arrival.Arrival, n int) []byte {
	if b.dataset != nil && len(a.PrefixBlocks) == 0 {
		rest := n
		if b.prefix != nil {
			// The shared prefix in words, then the dataset's text.
			p := min(b.prefix.Len, n)
			dst = b.words.appendRun(dst, false, b.prefix.hash(b.salt, b.prefix.Pick(a.Index)), p)
			if rest -= p; rest > 0 {
				dst = append(dst, ' ')
			}
		}
		if rest > 0 {
			dst = b.dataset.appendText(dst, a.Index, rest)
		}
	} else {
		dst = b.appendBody(dst, &b.words, a, n)
	}
	if b.suffix != "" {
		dst = append(dst, ' ')
		dst = appendEscaped(dst, b.suffix)
	}
	return dst
}

// appendBody writes n separated units: the prefix blocks of a first (each
// the same for the same id), then units unique to this request.
func (b *Builder) appendBody(dst []byte, p *pool, a *arrival.Arrival, n int) []byte {
	written := 0
	if b.prefix != nil && len(a.PrefixBlocks) == 0 {
		written = min(b.prefix.Len, n)
		dst = p.appendRun(dst, false, b.prefix.hash(b.salt, b.prefix.Pick(a.Index)), written)
	}
	for _, id := range a.PrefixBlocks {
		if written >= n {
			break
		}
		k := min(b.block, n-written)
		dst = p.appendRun(dst, written > 0, mix(b.salt, 0xb10c, id), k)
		written += k
	}
	if written < n {
		// The first unit of the unique part is derived from the request
		// index, so no two requests share a prefix by accident.
		h := mix(b.salt, 0x5eed, uint64(a.Index))
		dst = p.appendRun(dst, written > 0, h, n-written)
	}
	return dst
}

// pool is a long run of pre-encoded units with their offsets, from which
// prompts are cut as contiguous slices.
type pool struct {
	enc  []byte
	off  []int32 // off[i] is where unit i starts; off[len] = len(enc)
	unit func(uint64) []byte
	sep  byte
}

const poolUnits = 1 << 15

func newPool(salt uint64, unit func(uint64) []byte, sep byte) pool {
	p := pool{unit: unit, sep: sep, off: make([]int32, 0, poolUnits+1)}
	s := salt ^ 0x243f6a8885a308d3
	for range poolUnits {
		p.off = append(p.off, int32(len(p.enc)))
		p.enc = append(p.enc, unit(splitmix(&s))...)
		p.enc = append(p.enc, sep)
	}
	p.off = append(p.off, int32(len(p.enc)))
	return p
}

// leadUnits is how many units of a run are derived from its hash alone; with
// the pool position they make two runs' starts collide with probability
// below 1e-10 (token ids) or 1e-11 (words).
const leadUnits = 3

// appendRun writes k units chosen by h: up to leadUnits units derived from h
// itself, then a contiguous run of the pool starting at a position chosen by
// h.
func (p *pool) appendRun(dst []byte, sepFirst bool, h uint64, k int) []byte {
	for i := range min(k, leadUnits) {
		if sepFirst || i > 0 {
			dst = append(dst, p.sep)
		}
		u := h
		dst = append(dst, p.unit(splitmix(&u)+uint64(i))...)
		h = bits.RotateLeft64(h, 13) ^ uint64(i+1)*0x9e3779b97f4a7c15
	}
	k -= leadUnits
	pos := int(h>>17) % poolUnits
	for k > 0 {
		m := min(k, poolUnits-pos)
		dst = append(dst, p.sep)
		dst = append(dst, p.enc[p.off[pos]:p.off[pos+m]-1]...)
		k -= m
		pos = 0
	}
	return dst
}

// Token ids are drawn from [1000, 30000): real ids in every common
// vocabulary (≥ 32,000 entries) and clear of the low special tokens.
const (
	idLow   = 1000
	idRange = 29000
)

func tokenID(v uint64) uint64 { return idLow + v%idRange }

// mix hashes its inputs into one well-spread value.
func mix(a, b, c uint64) uint64 {
	h := a ^ bits.RotateLeft64(b, 21) ^ bits.RotateLeft64(c, 42)
	return splitmix(&h)
}

func splitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// appendEscaped appends s escaped for the inside of a JSON string.
func appendEscaped(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
