package workload

import (
	"errors"
	"fmt"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
)

// MediaOptions puts synthetic media in every request's chat content, in
// any mode: ImagesPerRequest images (of --image-size, ReplayOptions) in
// ImageFormat, and an audio clip of Audio.Seconds. The media come on top
// of the mode's length: an arrival's input length becomes its text (the
// mode's length, less the tokens of a trace's own images it replaces)
// plus its media's tokens, what the server's usage counts.
type MediaOptions struct {
	ImagesPerRequest int    // --images-per-request (0: the trace's, if any)
	ImageFormat      string // --image-format: png or jpeg
	// Audio is --audio-seconds: one WAV clip in every chat request. The
	// transcription backend reads the same flag for the file it sends.
	Audio prompt.AudioOptions
}

// MaxImagesPerRequest bounds --images-per-request.
const MaxImagesPerRequest = 32

// On reports whether requests carry media of these options.
func (m MediaOptions) On() bool { return m.ImagesPerRequest > 0 || m.Audio.Seconds > 0 }

// Validate returns every problem of the media options.
func (m MediaOptions) Validate() error {
	var errs []error
	if m.ImagesPerRequest < 0 || m.ImagesPerRequest > MaxImagesPerRequest {
		errs = append(errs, fmt.Errorf("--images-per-request %d: want 0 to %d", m.ImagesPerRequest, MaxImagesPerRequest))
	}
	if _, err := prompt.ParseImageFormat(m.ImageFormat); err != nil {
		errs = append(errs, fmt.Errorf("--image-format: %w", err))
	}
	if err := m.Audio.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--audio-seconds: %w", err))
	}
	return errors.Join(errs...)
}

// apply gives every arrival of s ImagesPerRequest images and the audio
// clip's tokens, each of img's size (s unchanged without media).
func (m MediaOptions) apply(s arrival.Schedule, img prompt.ImageOptions) arrival.Schedule {
	if !m.On() {
		return s
	}
	audio := m.Audio.Tokens()
	return func(yield func(arrival.Arrival) bool) {
		for a := range s {
			text := a.InputTokens
			if m.ImagesPerRequest > 0 {
				text = img.TextTokens(a.InputTokens, a.Images)
				a.Images = m.ImagesPerRequest
			}
			a.InputTokens = max(text, 1) + a.Images*img.TokensPerImage + audio
			a.Audio = audio > 0
			if !yield(a) {
				return
			}
		}
	}
}
