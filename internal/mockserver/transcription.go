package mockserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"time"
)

// POST /v1/audio/transcriptions answers a multipart/form-data request as
// vLLM's speech-to-text models do (docs/POOLING.md): the form's file is a
// WAV (RIFF, PCM), read for its length only; every second of it counts
// AudioTokensPerSecond prompt tokens. The answer is max_completion_tokens
// tokens (else OutputTokensPerAudioSecond a second, at least one) of
// tokenText, timed as a generation: the first at TTFT + PrefillPerToken ×
// the audio's tokens after a slot is free, then one every ITL; streamed
// as transcription.chunk events (usage last with stream_include_usage,
// then [DONE]) with stream=true, else {"text": …, "usage": {"type":
// "duration", "seconds": S}}. Other fields (language, prompt,
// temperature…) are accepted and ignored.

// AudioTokensPerSecond is the prompt tokens of one second of audio:
// Whisper's encoder makes 1,500 positions of a 30 s window (the client's
// client.AudioTokensPerSecond, so its targets are the server's count).
const AudioTokensPerSecond = 50

// OutputTokensPerAudioSecond is the length of a transcription that sets
// no max_completion_tokens (about the words a speaker says a second).
const OutputTokensPerAudioSecond = 2

// transcription is what the server understood of a transcription.
type transcription struct {
	model         string
	seconds       float64
	promptTokens  int
	out           int
	stream, usage bool
}

// parseTranscription reads a transcription form.
func (s *Server) parseTranscription(contentType string, body []byte) (transcription, error) {
	req := transcription{model: s.cfg.Models[0]}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return req, errors.New("the body must be multipart/form-data")
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	fields := map[string]string{}
	var file []byte
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return req, fmt.Errorf("the form: %v", err)
		}
		v, err := io.ReadAll(p)
		if err != nil {
			return req, fmt.Errorf("the form: %v", err)
		}
		if p.FormName() == "file" {
			if p.FileName() == "" {
				return req, errors.New("file: a file part is required, not a text field")
			}
			file = v
			continue
		}
		fields[p.FormName()] = string(v)
	}
	if file == nil {
		return req, errors.New("file: required")
	}
	if req.seconds, err = wavLength(bytes.NewReader(file), len(file)); err != nil {
		return req, err
	}
	if m := fields["model"]; m != "" {
		req.model = m
	}
	req.stream = fields["stream"] == "true"
	req.usage = fields["stream_include_usage"] == "true"
	if !req.stream && (fields["stream_include_usage"] != "" || fields["stream_continuous_usage_stats"] != "") {
		return req, errors.New("Stream options can only be defined when `stream=True`.")
	}
	req.promptTokens = int(math.Ceil(req.seconds * AudioTokensPerSecond))
	req.out = max(int(math.Ceil(req.seconds*OutputTokensPerAudioSecond)), 1)
	if m := fields["max_completion_tokens"]; m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 1 || n > maxOutputTokens {
			return req, fmt.Errorf("max_completion_tokens %q: want an integer from 1 to %d", m, maxOutputTokens)
		}
		req.out = n
	}
	return req, nil
}

// handleTranscription serves POST /v1/audio/transcriptions.
func (s *Server) handleTranscription(w http.ResponseWriter, r *http.Request) {
	bp := bodyPool.Get().(*[]byte)
	defer putBody(bp)
	body, _, ok := s.receiveValues(w, r, bp, -1) // a form, not JSON
	if !ok {
		return
	}
	req, err := s.parseTranscription(r.Header.Get("Content-Type"), body)
	id, ok := s.begin(w, r, req.model, err)
	if !ok {
		return
	}
	defer s.release()
	ctx := r.Context()
	defer s.kv.hold(req.promptTokens + req.out)()
	first := time.Now().Add(s.cfg.TTFT + time.Duration(req.promptTokens)*s.cfg.PrefillPerToken)
	head := func(b []byte) []byte {
		b = append(b, `{"id":"trsc-`...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, `","object":"transcription.chunk","created":`...)
		b = strconv.AppendInt(b, time.Now().Unix(), 10)
		b = append(b, `,"model":`...)
		return strconv.AppendQuote(b, req.model)
	}
	if req.stream {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		rc := http.NewResponseController(w)
		w.WriteHeader(http.StatusOK)
		rc.Flush()
		var b []byte
		var pace pacer
		defer pace.stop()
		for k := range req.out {
			if !pace.until(ctx, first.Add(time.Duration(k)*s.cfg.ITL)) {
				s.aborted.Add(1)
				return
			}
			b = append(b[:0], "data: "...)
			b = head(b)
			b = append(b, `,"choices":[{"delta":{"content":"`+tokenText+`"},"finish_reason":`...)
			if k == req.out-1 {
				b = append(b, `"stop"`...)
			} else {
				b = append(b, "null"...)
			}
			b = append(b, `,"stop_reason":null}]}`+"\n\n"...)
			if _, err := w.Write(b); err != nil {
				return
			}
			if s.cfg.ITL > 0 {
				rc.Flush()
			}
		}
		b = b[:0]
		if req.usage {
			b = append(b, "data: "...)
			b = head(b)
			b = append(b, `,"choices":[],"usage":{"prompt_tokens":`...)
			b = strconv.AppendInt(b, int64(req.promptTokens), 10)
			b = append(b, `,"total_tokens":`...)
			b = strconv.AppendInt(b, int64(req.promptTokens+req.out), 10)
			b = append(b, `,"completion_tokens":`...)
			b = strconv.AppendInt(b, int64(req.out), 10)
			b = append(b, "}}\n\n"...)
		}
		b = append(b, "data: [DONE]\n\n"...)
		if _, err := w.Write(b); err != nil {
			return
		}
	} else {
		if !sleepUntil(ctx, first.Add(time.Duration(req.out-1)*s.cfg.ITL)) {
			s.aborted.Add(1)
			return
		}
		b := make([]byte, 0, 64+len(tokenText)*req.out)
		b = append(b, `{"text":"`...)
		for k := range req.out {
			if k == 0 {
				b = append(b, tokenText[1:]...)
			} else {
				b = append(b, tokenText...)
			}
		}
		b = append(b, `","usage":{"type":"duration","seconds":`...)
		b = strconv.AppendInt(b, int64(math.Ceil(req.seconds)), 10)
		b = append(b, "}}"...)
		if !writeJSON(w, b) {
			return
		}
	}
	s.completed.Add(1)
	s.promptTokens.Add(int64(req.promptTokens))
	s.genTokens.Add(int64(req.out))
	s.audioMillis.Add(int64(math.Round(req.seconds * 1000)))
}
