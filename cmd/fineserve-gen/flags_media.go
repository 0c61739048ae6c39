package main

import (
	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

// addMediaFlags declares the flags of synthetic media in chat requests
// (docs/PROMPTS.md). --image-size and --tokens-per-image (flags_replay.go)
// size the images of --images-per-request as they size Azure LMM rows'.
// --audio-seconds is declared here once for every backend that sends audio.
func addMediaFlags(fs *pflag.FlagSet, o *options.Options) {
	m := &o.Media
	fs.IntVar(&m.ImagesPerRequest, "images-per-request", m.ImagesPerRequest, "put N synthetic images (--image-size, --image-format) in every request's chat content, in any mode; their tokens (--tokens-per-image) count in the input length (0–32)")
	fs.StringVar(&m.ImageFormat, "image-format", "png", "synthetic images' format: png or jpeg")
	fs.Float64Var(&m.Audio.Seconds, "audio-seconds", m.Audio.Seconds, "chat backends: put a synthetic WAV clip of S seconds (16 kHz mono) in every request as an input_audio part, its tokens counted in the input length (0–600); a transcription backend sends it as the file")
	fs.Float64Var(&m.Audio.TokensPerSecond, "audio-tokens-per-second", m.Audio.TokensPerSecond, "prompt tokens a second of audio counts for, plus 2 (0: Qwen2-Audio's 25)")
}
