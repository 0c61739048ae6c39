package mockserver

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"
)

// ImageConfig is the latency model of POST /v1/images/generations: a
// request that got a slot (Config.MaxNumSeqs) takes
// Base + PerStep × steps + PerImage × n, then answers in OpenAI's shape.
type ImageConfig struct {
	Base, PerStep, PerImage time.Duration
	// DefaultSteps is the steps of a request without num_inference_steps
	// (0: DefaultImageSteps).
	DefaultSteps int
}

// Defaults of the image latency model: quick enough for tests and demos.
const (
	DefaultImageBase     = 20 * time.Millisecond
	DefaultImagePerStep  = time.Millisecond
	DefaultImagePerImage = 5 * time.Millisecond
	DefaultImageSteps    = 30
)

// maxImagesPerRequest bounds n.
const maxImagesPerRequest = 128

// mockPNG is the image every response carries: 8x8 pixels, base64-encoded
// once (a response stays small whatever n is).
var mockPNG = func() string {
	img := image.NewNRGBA(image.Rect(0, 0, 8, 8))
	for y := range 8 {
		for x := range 8 {
			img.Set(x, y, color.NRGBA{R: uint8(32 * x), G: uint8(32 * y), B: 128, A: 255})
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return base64.StdEncoding.EncodeToString(b.Bytes())
}()

// imageRequest is what the server understood of an image request.
type imageRequest struct {
	model        string
	promptTokens int
	n, steps     int
	loras        int
	url          bool
}

// parseImage reads an image-generation body.
func (s *Server) parseImage(body []byte) (imageRequest, error) {
	p := s.parsers.Get()
	defer s.parsers.Put(p)
	v, err := parseObject(p, body)
	if err != nil {
		return imageRequest{}, err
	}
	req := imageRequest{model: s.modelOf(v), n: 1, steps: s.cfg.Images.DefaultSteps}
	if req.steps <= 0 {
		req.steps = DefaultImageSteps
	}
	pr := v.Get("prompt")
	if pr == nil || pr.Type() != fastjson.TypeString {
		return req, errors.New("prompt: a string is required")
	}
	req.promptTokens = s.countText(pr.GetStringBytes())
	num := func(key string, lo, hi int, dst *int) error {
		x := v.Get(key)
		if x == nil || x.Type() == fastjson.TypeNull {
			return nil
		}
		n, err := x.Int()
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%s: want an integer in [%d, %d]", key, lo, hi)
		}
		*dst = n
		return nil
	}
	if err := num("n", 1, maxImagesPerRequest, &req.n); err != nil {
		return req, err
	}
	if err := num("num_inference_steps", 1, 10000, &req.steps); err != nil {
		return req, err
	}
	if sz := v.Get("size"); sz != nil && sz.Type() != fastjson.TypeNull {
		w, h, ok := strings.Cut(string(sz.GetStringBytes()), "x")
		wi, e1 := strconv.Atoi(w)
		hi, e2 := strconv.Atoi(h)
		if sz.Type() != fastjson.TypeString || !ok || e1 != nil || e2 != nil || wi < 1 || hi < 1 {
			if string(sz.GetStringBytes()) != "auto" {
				return req, errors.New(`size: want "WxH", e.g. "512x512", or "auto"`)
			}
		}
	}
	if req.url, err = eitherOption(v, "response_format", "b64_json", "url"); err != nil {
		return req, err
	}
	if l := v.Get("loras"); l != nil && l.Type() != fastjson.TypeNull {
		items, err := l.Array()
		if err != nil {
			return req, errors.New("loras: want a list")
		}
		req.loras = len(items)
	}
	return req, nil
}

// handleImages serves POST /v1/images/generations.
func (s *Server) handleImages(w http.ResponseWriter, r *http.Request) {
	bp := bodyPool.Get().(*[]byte)
	defer putBody(bp)
	// Only the faults that answer before a response apply (refuse, http_*,
	// slow_headers): an image response is not streamed.
	body, _, ok := s.receive(w, r, bp)
	if !ok {
		return
	}
	req, err := s.parseImage(body)
	id, ok := s.begin(w, r, req.model, err)
	if !ok {
		return
	}
	defer s.release()
	ctx := r.Context()
	ic := s.cfg.Images
	done := time.Now().Add(ic.Base + time.Duration(req.steps)*ic.PerStep + time.Duration(req.n)*ic.PerImage)
	if !sleepUntil(ctx, done) {
		return
	}
	b := make([]byte, 0, 128+req.n*(len(mockPNG)+32))
	b = append(b, `{"created":`...)
	b = strconv.AppendInt(b, time.Now().Unix(), 10)
	b = append(b, `,"data":[`...)
	for k := range req.n {
		if k > 0 {
			b = append(b, ',')
		}
		if req.url {
			b = append(b, `{"url":"data:image/png;base64,`...)
		} else {
			b = append(b, `{"b64_json":"`...)
		}
		b = append(b, mockPNG...)
		b = append(b, `","revised_prompt":null}`...)
	}
	b = append(b, `],"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(req.promptTokens), 10)
	b = append(b, `,"output_tokens":0,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(req.promptTokens), 10)
	b = append(b, `},"id":"img-`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `"}`...)
	if !writeJSON(w, b) {
		return
	}
	s.completed.Add(1)
	s.promptTokens.Add(int64(req.promptTokens))
	s.images.Add(int64(req.n))
}

// GeneratedImages is the number of images the server has returned.
func (s *Server) GeneratedImages() int64 { return s.images.Load() }
