package prompt

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/fineserve-gen/fineserve-gen/internal/wav"
)

// Audio clips (--audio-seconds): every request's chat content gets one
// synthetic WAV clip (16 kHz, mono, 16-bit PCM: a 440 Hz tone) as an
// input_audio part. Its first 128 samples are noise derived from the run's
// salt and the request index, so no two requests send the same samples;
// the rest is encoded once, already in base64.

// AudioOptions sizes the audio clip of every request.
type AudioOptions struct {
	// Seconds is the clip's length (0: no audio).
	Seconds float64
	// TokensPerSecond is what a second counts for in the prompt (0:
	// DefaultAudioTokensPerSecond).
	TokensPerSecond float64
}

// MaxAudioSeconds bounds --audio-seconds: 10 minutes is 19.2 MB of WAV
// (25.6 MB as base64), within the built-in server's 32 MiB body.
const MaxAudioSeconds = 600

// AudioSampleRate is the clips' sample rate (Whisper's and Qwen2-Audio's).
const AudioSampleRate = wav.SampleRate

// DefaultAudioTokensPerSecond is Qwen2-Audio's (and Qwen2.5-Omni's) rate:
// Whisper's encoder gives 50 frames a second, pooled by 2.
const DefaultAudioTokensPerSecond = 25

// AudioMarkerTokens are the tokens around a clip's (<|audio_bos|>,
// <|audio_eos|>).
const AudioMarkerTokens = 2

// Validate reports a clip no request can carry.
func (o AudioOptions) Validate() error {
	switch {
	case !(o.Seconds >= 0):
		return fmt.Errorf("audio length %g s: want ≥ 0 (0: none)", o.Seconds)
	case o.Seconds > MaxAudioSeconds:
		return fmt.Errorf("audio length %g s: want at most %d s", o.Seconds, MaxAudioSeconds)
	}
	if !(o.TokensPerSecond >= 0) || math.IsInf(o.TokensPerSecond, 0) {
		return fmt.Errorf("audio tokens per second %g: want ≥ 0", o.TokensPerSecond)
	}
	return nil
}

// Tokens is what the clip counts for in a prompt: its seconds at
// TokensPerSecond, rounded up, plus AudioMarkerTokens (0 without audio).
func (o AudioOptions) Tokens() int {
	if o.Seconds <= 0 {
		return 0
	}
	return AudioTokens(o.Seconds, o.TokensPerSecond)
}

// AudioTokens is the prompt tokens of a clip of seconds at perSecond
// tokens a second (0: DefaultAudioTokensPerSecond), as the built-in
// server counts them.
func AudioTokens(seconds, perSecond float64) int {
	if perSecond <= 0 {
		perSecond = DefaultAudioTokensPerSecond
	}
	return int(math.Ceil(seconds*perSecond-1e-9)) + AudioMarkerTokens
}

// audioSource builds its clip on first use.
type audioSource struct {
	opts AudioOptions
	once sync.Once
	wav  *wavBase
}

func (s *audioSource) on() bool { return s.opts.Seconds > 0 }

func (s *audioSource) tokens() int { return s.opts.Tokens() }

func (s *audioSource) base() *wavBase {
	s.once.Do(func() { s.wav = newWAVBase(s.opts.Seconds) })
	return s.wav
}

// wavBase is a clip: its header and unique samples are written per
// request (wavHead bytes), the rest is cached as base64.
type wavBase struct {
	head   []byte // the header and the first samples, varied per request
	rest64 []byte
}

// wavHead is the 44-byte header and 128 samples: 300 bytes, a multiple of
// 3, so the cached base64 continues it.
const wavHead = wav.HeaderSize + 2*128

func newWAVBase(seconds float64) *wavBase {
	b := wav.New(wav.Samples(seconds), func(i int) int16 {
		return int16(8000 * math.Sin(2*math.Pi*440*float64(i)/AudioSampleRate))
	})
	k := min(wavHead, len(b)/3*3)
	if len(b) <= wavHead {
		k = len(b)
	}
	return &wavBase{head: b[:k:k], rest64: base64.StdEncoding.AppendEncode(nil, b[k:])}
}

// appendBase64 appends the base64 of request index's clip.
func (w *wavBase) appendBase64(dst []byte, salt uint64, index int64) []byte {
	var buf [wavHead]byte
	hd := append(buf[:0], w.head...)
	seed := mix(salt, 0xa0d10, uint64(index))
	for i := wav.HeaderSize; i+1 < len(hd); i += 2 {
		v := splitmix(&seed)
		binary.LittleEndian.PutUint16(hd[i:], uint16(int16(v%2001)-1000)) // quiet noise
	}
	dst = base64.StdEncoding.AppendEncode(dst, hd)
	return append(dst, w.rest64...)
}
