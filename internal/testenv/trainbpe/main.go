// Command trainbpe writes a byte-level BPE tokenizer.json trained on text
// files (testenv.TrainBPE): a tokenizer for the docs' examples and local
// experiments that needs no download.
//
//	go run ./internal/testenv/trainbpe -merges 2000 -out /tmp/tok.json FILE...
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

func main() {
	merges := flag.Int("merges", 2000, "most merges to learn")
	out := flag.String("out", "tokenizer.json", "file to write")
	flag.Parse()
	var corpus strings.Builder
	for _, p := range flag.Args() {
		b, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "trainbpe:", err)
			os.Exit(1)
		}
		corpus.Write(b)
		corpus.WriteByte('\n')
	}
	if err := os.WriteFile(*out, testenv.TrainBPE(corpus.String(), *merges), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "trainbpe:", err)
		os.Exit(1)
	}
}
