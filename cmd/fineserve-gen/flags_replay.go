package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
)

// defaultTokensPerImage is what the built-in server counts an image part
// for by default: what a run counts for its default 512x512 images.
var defaultTokensPerImage = prompt.DefaultTokensPerImage(512, 512)

// addReplayFlags declares the flags of --mode replay.
func addReplayFlags(fs *pflag.FlagSet, o *options.Options) {
	r := &o.Replay
	fs.StringVar(&r.TracePath, "request-trace-csv", r.TracePath, "replay: trace file: FineServe, Azure LLM/LMM, BurstGPT or schedule CSV, Mooncake JSONL, or any CSV/JSONL (.gz too)")
	fs.StringVar(&r.TracePath, "trace", r.TracePath, "replay: alias of --request-trace-csv")
	fs.StringVar(&r.TraceFormat, "trace-format", r.TraceFormat, "replay: fineserve, azure-llm, azure-lmm, mooncake, burstgpt, alibaba-lora, alibaba-t2i, schedule, csv, jsonl, or the agentic weka, tracelab, bailian (default: detected from the header)")
	fs.StringVar(&r.TimestampColumn, "timestamp-column", r.TimestampColumn, "replay: timestamp column (default per format)")
	fs.StringVar(&r.InputLengthColumn, "input-length-column", r.InputLengthColumn, "replay: input length column (default per format)")
	fs.StringVar(&r.OutputLengthColumn, "output-length-column", r.OutputLengthColumn, "replay: output length column (default per format)")
	fs.StringVar(&r.ModelColumn, "model-column", r.ModelColumn, "replay: model column (BurstGPT: Model)")
	fs.StringVar(&r.TimestampUnit, "timestamp-unit", r.TimestampUnit, "replay: timestamp unit: s, ms, us, ns or datetime (default per format)")
	fs.BoolVar(&r.Strict, "strict", r.Strict, "replay: fail on the first unusable row instead of skipping and counting it")
	fs.BoolVar(&r.KeepFailed, "keep-failed", r.KeepFailed, "replay: keep rows the trace marks as failed (BurstGPT: 0 response tokens)")
	fs.IntVar(&r.MinOutputLen, "min-output-len", r.MinOutputLen, "replay: output length sent for rows with output length 0")
	fs.Float64Var(&r.TargetRate, "target-rate", r.TargetRate, "replay: set the time scale so the replayed slice's mean rate is this (req/s)")
	fs.Var(traceStartValue{&r.TraceStart, &r.TraceBusiest}, "trace-start", "replay: start this far into the trace (trace time, e.g. 2h), or 'busiest' for the busiest --trace-duration window")
	fs.Var(durationValue{&r.TraceDuration}, "trace-duration", "replay: replay this much of the trace (trace time, before --time-scale)")
	fs.Var(imageSizeValue{&r.ImageWidth, &r.ImageHeight}, "image-size", "replay: size WxH of the synthetic images of multimodal rows (Azure LMM)")
	fs.IntVar(&r.TokensPerImage, "tokens-per-image", r.TokensPerImage, "replay: prompt tokens one image counts for (0: Qwen2-VL's count for --image-size, 324 at 512x512)")
	ag := &o.Agentic
	fs.StringVar(&ag.Timing, "agent-timing", ag.Timing, "agentic replay: when a conversation's next step is due: think (think_time after the previous response), original (the trace's gap after the previous send) or api-scaled (api_time × --api-time-scale + think_time)")
	fs.Float64Var(&ag.APIScale, "api-time-scale", ag.APIScale, "agentic replay: api_time multiplier of --agent-timing api-scaled")
	fs.Var(durationValue{&ag.MaxThink}, "max-think-time", "agentic replay: cap every idle gap of a conversation (tool and think time) at this (0: no cap)")
	fs.Int64Var(&ag.Conversations, "conversations", ag.Conversations, "agentic replay: start N conversations drawn by --seed, Poisson at --request-rate, instead of the trace's own starts")
}

// traceStartValue is --trace-start: a duration, or "busiest".
type traceStartValue struct {
	d       *time.Duration
	busiest *bool
}

func (v traceStartValue) String() string {
	if v.busiest != nil && *v.busiest {
		return "busiest"
	}
	return durationValue{v.d}.String()
}

func (v traceStartValue) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), "busiest") {
		*v.busiest = true
		return nil
	}
	*v.busiest = false
	return durationValue{v.d}.Set(s)
}

func (v traceStartValue) Type() string { return "duration|busiest" }

// imageSizeValue is --image-size WxH.
type imageSizeValue struct{ w, h *int }

func (v imageSizeValue) String() string {
	if v.w == nil {
		return "512x512"
	}
	return fmt.Sprintf("%dx%d", *v.w, *v.h)
}

func (v imageSizeValue) Set(s string) error {
	w, h, err := prompt.ParseImageSize(s)
	if err != nil {
		return err
	}
	*v.w, *v.h = w, h
	return nil
}

func (v imageSizeValue) Type() string { return "WxH" }
