module github.com/fineserve-gen/fineserve-gen

go 1.26.8

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0 // indirect
	github.com/sashabaranov/go-openai v1.43.0 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	github.com/valyala/fastjson v1.6.10 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/term v0.47.0 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)
