// Package parametric owns --mode parametric's synthetic schedules (Gamma windows, their extension,
// NB micro-bursts, request sizes) and the fitting of those parameters to a trace (fineserve-gen fit).
//
// # Semantics
//
// A Gamma window file has one row per window: gamma_shape and gamma_scale
// (in milliseconds), and optionally window_start_ms and window_end_ms. Inside
// window w the gaps between arrival events are Gamma(shape_w, scale_w). A gap
// is drawn with the parameters of the window it starts in, even when it ends
// in a later one; the process is not restarted at window boundaries, so every
// gap of a schedule is exactly Gamma-distributed for the window of the
// arrival that opens it. The first arrival is due at 0. With explicit window
// bounds, time between one window's end and the next one's start is silent:
// the process is paused there (no arrival falls in it).
//
// Beyond the file, the windows repeat: RepeatJitter multiplies every
// window's shape and scale by independent factors uniform in [1−r, 1+r);
// ModelSample draws (log shape, log scale) for every window from the
// bivariate normal fitted to the file's rows. The first pass always uses the
// file's rows unchanged.
//
// With an NB micro-burst model, every Gamma event becomes a burst of K ≥ 1
// requests: the first at the event's time, the others at uniform offsets
// inside the following millisecond. K is the Negative Binomial (mean Mu,
// variance Mu + Alpha·Mu²) conditioned on K ≥ 1, and event gaps are Gamma
// with scale scale_w·E[K], so the request rate of window w stays
// 1/(shape_w·scale_w).
//
// Generation is pure: no clock, no goroutine; the same Config gives the same
// schedule, byte for byte.
package parametric
