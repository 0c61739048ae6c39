package client

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// Synthetic audio for the openai-transcriptions backend: a mono 16-bit PCM
// WAV at 16 kHz (Whisper's rate), made of two tones and a little noise
// drawn from the seed — the same bytes for the same seed and length. Its
// content does not matter to a benchmark; its length does (a server
// counts audio tokens by the second).
const (
	AudioSampleRate = 16000
	// DefaultAudioSeconds is --audio-seconds' default.
	DefaultAudioSeconds = 10.0
	// MaxAudioSeconds bounds --audio-seconds: 600 s is 19.2 MB a request.
	MaxAudioSeconds = 600.0
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
	n := max(int(math.Round(seconds*AudioSampleRate)), 1)
	data := 2 * n
	b := make([]byte, 44, 44+data)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+data))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)                // fmt chunk size
	binary.LittleEndian.PutUint16(b[20:], 1)                 // PCM
	binary.LittleEndian.PutUint16(b[22:], 1)                 // mono
	binary.LittleEndian.PutUint32(b[24:], AudioSampleRate)   // sample rate
	binary.LittleEndian.PutUint32(b[28:], AudioSampleRate*2) // byte rate
	binary.LittleEndian.PutUint16(b[32:], 2)                 // block align
	binary.LittleEndian.PutUint16(b[34:], 16)                // bits per sample
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(data))
	rng := rand.New(rand.NewPCG(seed, 0xa0d10))
	f1, f2 := 180+rng.Float64()*120, 600+rng.Float64()*900 // a voice's pitch, a formant
	w1, w2 := 2*math.Pi*f1/AudioSampleRate, 2*math.Pi*f2/AudioSampleRate
	b = b[:44+data]
	for i := range n {
		env := 0.5 + 0.5*math.Sin(2*math.Pi*float64(i)/(0.4*AudioSampleRate)) // syllables
		v := env*(0.5*math.Sin(w1*float64(i))+0.2*math.Sin(w2*float64(i))) + 0.02*(rng.Float64()*2-1)
		binary.LittleEndian.PutUint16(b[44+2*i:], uint16(int16(v*16000)))
	}
	return b
}
