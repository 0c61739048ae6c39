package client

import (
	"math"
	"math/rand/v2"

	"github.com/fineserve-gen/fineserve-gen/internal/wav"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
)

// Synthetic audio for the openai-transcriptions backend: a mono 16-bit PCM
// WAV at 16 kHz (Whisper's rate), made of two tones and a little noise
// drawn from the seed — the same bytes for the same seed and length. Its
// content does not matter to a benchmark; its length does (a server
// counts audio tokens by the second).
const (
	AudioSampleRate = wav.SampleRate
	// DefaultAudioSeconds and MaxAudioSeconds are --audio-seconds' default
	// and bound.
	DefaultAudioSeconds = api.DefaultAudioSeconds
	MaxAudioSeconds     = api.MaxAudioSeconds
	// AudioTokensPerSecond is what a second of audio counts for as input
	// tokens: Whisper's encoder makes 1,500 positions of a 30 s window. A
	// transcription's input length (Result.InputLen) is its audio's
	// tokens at this rate, not the schedule's input length.
	AudioTokensPerSecond = 50
)

// AudioTokens is the input tokens of seconds of audio
// (AudioTokensPerSecond a second, rounded up).
func AudioTokens(seconds float64) int { return int(math.Ceil(seconds * AudioTokensPerSecond)) }

// SyntheticWAV returns a WAV of seconds (at least one sample) made from
// seed.
func SyntheticWAV(seconds float64, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 0xa0d10))
	f1, f2 := 180+rng.Float64()*120, 600+rng.Float64()*900 // a voice's pitch, a formant
	w1, w2 := 2*math.Pi*f1/AudioSampleRate, 2*math.Pi*f2/AudioSampleRate
	return wav.New(wav.Samples(seconds), func(i int) int16 {
		env := 0.5 + 0.5*math.Sin(2*math.Pi*float64(i)/(0.4*AudioSampleRate)) // syllables
		v := env*(0.5*math.Sin(w1*float64(i))+0.2*math.Sin(w2*float64(i))) + 0.02*(rng.Float64()*2-1)
		return int16(v * 16000)
	})
}
