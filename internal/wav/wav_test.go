package wav

import (
	"encoding/binary"
	"testing"
)

func TestNew(t *testing.T) {
	for _, seconds := range []float64{0, 0.5, 2} {
		n := Samples(seconds)
		b := New(n, func(i int) int16 { return int16(i - 3) })
		le := binary.LittleEndian
		if len(b) != HeaderSize+2*n || string(b[:4]) != "RIFF" || string(b[8:16]) != "WAVEfmt " || string(b[36:40]) != "data" {
			t.Fatalf("%g s: %d bytes, header %q", seconds, len(b), b[:HeaderSize])
		}
		if le.Uint32(b[4:]) != uint32(len(b)-8) || le.Uint32(b[24:]) != SampleRate || le.Uint16(b[34:]) != 16 || le.Uint32(b[40:]) != uint32(2*n) {
			t.Errorf("%g s: header %v", seconds, b[:HeaderSize])
		}
		if n != max(int(seconds*SampleRate), 1) || int16(le.Uint16(b[HeaderSize:])) != -3 || int16(le.Uint16(b[len(b)-2:])) != int16(n-4) {
			t.Errorf("%g s: %d samples, first %d, last %d", seconds, n, int16(le.Uint16(b[HeaderSize:])), int16(le.Uint16(b[len(b)-2:])))
		}
	}
}
