package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
)

func mockServerCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("mock-server", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard)
	var cfg mockserver.Config
	host := fs.String("host", "127.0.0.1", "address to bind (loopback unless told otherwise)")
	port := fs.Int("port", 8000, "port to listen on (0: any free port)")
	models := fs.StringSlice("model", []string{"mock-model"}, "served model name(s); the first is the default")
	fs.Var(millisValue{&cfg.TTFT}, "ttft-ms", "time to first token, in ms")
	fs.Var(millisValue{&cfg.ITL}, "itl-ms", "inter-token latency, in ms")
	fs.Var(microsValue{&cfg.PrefillPerToken}, "prefill-us-per-token", "added to the time to first token per prompt token, in µs")
	fs.IntVar(&cfg.MaxNumSeqs, "max-num-seqs", 0, "requests generating at once; more wait in a queue (0: unbounded)")
	fs.IntVar(&cfg.MaxModelLen, "max-model-len", 0, "reject prompt+max_tokens above this with vLLM's 400 (0: no limit)")
	fs.IntVar(&cfg.EOSMeanTokens, "eos-mean-tokens", 0, "without ignore_eos, stop after a geometric number of tokens of this mean (0: always max_tokens)")
	fs.IntVar(&cfg.TokensPerImage, "tokens-per-image", 0, "prompt tokens counted per image part of a chat message")
	portFile := fs.String("port-file", "", "write the port listened on to this file once ready")
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			fmt.Fprintf(stdout, "Usage: fineserve-gen mock-server [flags]\n\n%s", fs.FlagUsages())
			return exitOK
		}
		fmt.Fprintf(stderr, "fineserve-gen mock-server: %v\n", err)
		return exitUsage
	}
	cfg.Models = *models
	srv, err := mockserver.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "fineserve-gen mock-server: %v\n", err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintf(stderr, "fineserve-gen mock-server: %v\n", err)
		return exitFailure
	}
	addr := ln.Addr().(*net.TCPAddr)
	if *portFile != "" {
		if err := os.WriteFile(*portFile, []byte(strconv.Itoa(addr.Port)+"\n"), 0o644); err != nil {
			fmt.Fprintf(stderr, "fineserve-gen mock-server: %v\n", err)
			return exitFailure
		}
	}
	fmt.Fprintf(stderr, "mock-server: serving %s on http://%s (ttft %v, itl %v, max-num-seqs %d)\n",
		strings.Join(cfg.Models, ","), addr, cfg.TTFT, cfg.ITL, cfg.MaxNumSeqs)
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintf(stderr, "fineserve-gen mock-server: %v\n", err)
		return exitFailure
	}
	st := srv.Stats()
	fmt.Fprintf(stderr, "mock-server: stopped after %v: %d requests, %d completed\n", st.Up.Round(time.Millisecond), st.Requests, st.Completed)
	return exitOK
}
