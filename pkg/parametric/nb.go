package parametric

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/fineserve-gen/fineserve-gen/internal/bounded"
)

// NB is a Negative Binomial burst-size model: mean Mu, dispersion Alpha,
// variance Mu + Alpha·Mu² (Alpha 0 is Poisson). Bursts are drawn from it
// conditioned on K ≥ 1.
type NB struct {
	Mu, Alpha float64
}

// Limits on an NB model, so that drawing a burst stays cheap: without them a
// file could ask for bursts of billions of requests, or for a zero
// probability so close to 1 that redrawing zeros never ends.
const (
	MaxNBMu    = 1000
	MaxNBAlpha = 100
	// MinNBPositive is the smallest accepted P(K ≥ 1) = 1 − P(0).
	MinNBPositive = 1e-3
	// MaxBurst caps a burst's size (far beyond what any accepted model
	// draws in practice).
	MaxBurst = 1 << 16
)

// Validate reports a model outside the limits.
func (n NB) Validate() error {
	switch {
	case !(n.Mu > 0 && n.Mu <= MaxNBMu):
		return fmt.Errorf("nb_mu %g out of range (0, %d]", n.Mu, MaxNBMu)
	case !(n.Alpha >= 0 && n.Alpha <= MaxNBAlpha):
		return fmt.Errorf("nb_alpha %g out of range [0, %d]", n.Alpha, MaxNBAlpha)
	case 1-n.P0() < MinNBPositive:
		return fmt.Errorf("nb_mu %g, nb_alpha %g: P(K ≥ 1) = %.3g is below %g", n.Mu, n.Alpha, 1-n.P0(), MinNBPositive)
	}
	return nil
}

// P0 is the probability of K = 0 under the untruncated model:
// (1 + Alpha·Mu)^(−1/Alpha), or e^(−Mu) for Alpha 0.
func (n NB) P0() float64 { return math.Exp(logP0(n)) }

// Mean is E[K | K ≥ 1] = Mu / (1 − P0): the mean burst size, by which
// event gaps are stretched.
func (n NB) Mean() float64 { return n.Mu / -math.Expm1(logP0(n)) }

// Variance is Var[K | K ≥ 1].
func (n NB) Variance() float64 {
	pos := -math.Expm1(logP0(n))
	m2 := (n.Mu + n.Alpha*n.Mu*n.Mu + n.Mu*n.Mu) / pos // E[K²]/(1−P0)
	m := n.Mu / pos
	return m2 - m*m
}

func logP0(n NB) float64 {
	if n.Alpha == 0 {
		return -n.Mu
	}
	return -math.Log1p(n.Alpha*n.Mu) / n.Alpha
}

// LogProb is log P(K = k | K ≥ 1) for k ≥ 1.
func (n NB) LogProb(k int) float64 {
	if k < 1 {
		return math.Inf(-1)
	}
	kf := float64(k)
	lgk1, _ := math.Lgamma(kf + 1)
	var lp float64
	if n.Alpha == 0 {
		lp = kf*math.Log(n.Mu) - n.Mu - lgk1
	} else {
		r := 1 / n.Alpha
		a, _ := math.Lgamma(kf + r)
		b, _ := math.Lgamma(r)
		lp = a - b - lgk1 + r*math.Log(r/(r+n.Mu)) + kf*math.Log(n.Mu/(r+n.Mu))
	}
	return lp - math.Log(-math.Expm1(logP0(n)))
}

// burstSampler draws zero-truncated NB burst sizes as a Poisson–Gamma
// mixture: λ ~ Gamma(1/Alpha, Alpha·Mu), K ~ Poisson(λ), drawn again while
// K = 0.
type burstSampler struct {
	nb  NB
	lam distuv.Gamma
	src *rand.Rand
}

func newBurstSampler(nb NB, src *rand.Rand) *burstSampler {
	s := &burstSampler{nb: nb, src: src}
	if nb.Alpha > 0 {
		s.lam = distuv.Gamma{Alpha: 1 / nb.Alpha, Beta: 1 / (nb.Alpha * nb.Mu), Src: src}
	}
	return s
}

func (s *burstSampler) draw() int {
	for {
		lambda := s.nb.Mu
		if s.nb.Alpha > 0 {
			lambda = s.lam.Rand()
		}
		k := distuv.Poisson{Lambda: lambda, Src: s.src}.Rand()
		if k >= 1 {
			return int(min(k, MaxBurst))
		}
	}
}

// NBFile is FineServe's NB JSON: the model (nb_mu, nb_alpha) and what it was
// fitted to.
type NBFile struct {
	// NumSamples is the number of non-empty 1 ms bins the fit saw.
	NumSamples int64 `json:"num_samples"`
	// Mean and Variance are those of the observed burst sizes.
	Mean     float64 `json:"mean"`
	Variance float64 `json:"variance"`
	NBMu     float64 `json:"nb_mu"`
	NBAlpha  float64 `json:"nb_alpha"`
	// KSStat is the largest distance between the observed and the fitted
	// (zero-truncated) burst-size CDFs; KSPValue its asymptotic
	// Kolmogorov p-value (conservative for a discrete distribution).
	KSStat   float64 `json:"ks_stat"`
	KSPValue float64 `json:"ks_pvalue"`
}

// maxNBFile bounds the size of an NB JSON file read.
const maxNBFile = 1 << 20

// ReadNBJSON reads an NB JSON file (FineServe's format; only nb_mu and
// nb_alpha are required). Errors name the file, the line and the key.
func ReadNBJSON(r io.Reader, name string) (NB, error) {
	data, err := bounded.Read(r, maxNBFile)
	if err != nil {
		return NB{}, &ParseError{File: name, Err: err}
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		line := 0
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line = lineAt(data, se.Offset)
		case errors.As(err, &te):
			line = lineAt(data, te.Offset)
			err = errors.New("want a JSON object with nb_mu and nb_alpha")
		case errors.Is(err, io.EOF):
			err = errors.New("empty file: want a JSON object with nb_mu and nb_alpha")
		}
		return NB{}, &ParseError{File: name, Line: line, Err: err}
	}
	if off := dec.InputOffset(); len(bytes.TrimSpace(data[off:])) > 0 {
		return NB{}, &ParseError{File: name, Line: lineAt(data, off+1), Err: errors.New("unexpected data after the JSON object")}
	}
	var nb NB
	var errs []error
	get := func(key string, dst *float64) {
		v, ok := raw[key]
		if !ok {
			errs = append(errs, &ParseError{File: name, Field: key, Err: errors.New("missing")})
			return
		}
		if err := json.Unmarshal(v, dst); err != nil || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			errs = append(errs, &ParseError{File: name, Line: keyLine(data, key), Field: key,
				Err: fmt.Errorf("%s is not a number", truncate(string(v), 40))})
		}
	}
	get("nb_mu", &nb.Mu)
	get("nb_alpha", &nb.Alpha)
	if len(errs) > 0 {
		return NB{}, errors.Join(errs...)
	}
	if err := nb.Validate(); err != nil {
		return NB{}, &ParseError{File: name, Line: keyLine(data, "nb_mu"), Err: err}
	}
	return nb, nil
}

// WriteNBJSON writes f as FineServe writes its NB files (indented JSON).
func WriteNBJSON(w io.Writer, f NBFile) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// lineAt is the 1-based line of byte offset off of data.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

// keyLine is the line where "key" first appears in data (0 if not found).
func keyLine(data []byte, key string) int {
	i := bytes.Index(data, []byte(`"`+key+`"`))
	if i < 0 {
		return 0
	}
	return lineAt(data, int64(i))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
