// Package wav writes the synthetic audio clips requests carry: mono 16-bit
// PCM WAV at 16 kHz (Whisper's and Qwen2-Audio's rate), header and samples.
package wav

import (
	"encoding/binary"
	"math"
)

// SampleRate is the clips' sample rate.
const SampleRate = 16000

// HeaderSize is the length of a clip's header; its samples follow it.
const HeaderSize = 44

// Samples is the number of samples of a clip of seconds (at least one).
func Samples(seconds float64) int { return max(int(math.Round(seconds*SampleRate)), 1) }

// New returns a clip of n samples, sample(i) the i-th (called in order).
func New(n int, sample func(i int) int16) []byte {
	b := AppendHeader(make([]byte, 0, HeaderSize+2*n), n)
	for i := range n {
		b = binary.LittleEndian.AppendUint16(b, uint16(sample(i)))
	}
	return b
}

// AppendHeader appends the HeaderSize-byte header of a clip of n samples.
func AppendHeader(dst []byte, n int) []byte {
	dst = append(dst, "RIFF"...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(36+2*n))
	dst = append(dst, "WAVEfmt "...)
	dst = binary.LittleEndian.AppendUint32(dst, 16)           // fmt chunk size
	dst = binary.LittleEndian.AppendUint16(dst, 1)            // PCM
	dst = binary.LittleEndian.AppendUint16(dst, 1)            // mono
	dst = binary.LittleEndian.AppendUint32(dst, SampleRate)   // sample rate
	dst = binary.LittleEndian.AppendUint32(dst, 2*SampleRate) // bytes a second
	dst = binary.LittleEndian.AppendUint16(dst, 2)            // block align
	dst = binary.LittleEndian.AppendUint16(dst, 16)           // bits per sample
	dst = append(dst, "data"...)
	return binary.LittleEndian.AppendUint32(dst, uint32(2*n))
}
