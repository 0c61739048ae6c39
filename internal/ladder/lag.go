package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
)

// serverLag is the send lag of one run measured from the server's side.
type serverLag struct {
	// Arrived counts the requests that reached the server.
	Arrived int64 `json:"arrived"`
	// Achieved is the rate at which they arrived: (n − 1) over the time
	// from the first to the last arrival, in req/s.
	Achieved float64 `json:"achieved_rps"`
	// P50, P99 and Max are the lag in ms of the arrival matched with each
	// due time (see lagFromArrivals).
	P50 float64 `json:"server_lag_p50_ms"`
	P99 float64 `json:"server_lag_p99_ms"`
	Max float64 `json:"server_lag_max_ms"`
	// Origin is the start of the schedule the lags are measured from, in
	// Unix ns.
	Origin int64 `json:"schedule_origin_unix_ns"`
}

// lagFromArrivals measures how well a constant-rate schedule was kept, from
// the instants its requests reached the server (Unix ns, in arrival order).
//
// Requests carry no schedule index, so they are matched by order: the i-th
// arrival belongs to the i-th due time, origin + i/rate. The server cannot
// know the client's origin either, so it is placed at the latest instant
// that makes no request early: origin = min over i of (arrival_i − i/rate).
// The request that came closest to its due time then has lag 0, and every
// lag is how much later than that one a request arrived — the loopback
// transit time common to all requests cancels out, and both clients of a
// side-by-side ladder are measured the same way.
func lagFromArrivals(arrivals []int64, rate float64) (serverLag, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return serverLag{}, fmt.Errorf("rate %g: want a finite rate > 0", rate)
	}
	if len(arrivals) == 0 {
		return serverLag{}, errors.New("no request reached the server")
	}
	gap := 1e9 / rate
	// Offsets from the first arrival keep float64 exact to the nanosecond
	// (Unix ns themselves are beyond its 2^53).
	off := make([]float64, len(arrivals))
	origin := math.Inf(1)
	for i, a := range arrivals {
		if i > 0 && a < arrivals[i-1] {
			return serverLag{}, fmt.Errorf("arrival %d is before arrival %d", i, i-1)
		}
		off[i] = float64(a-arrivals[0]) - float64(i)*gap
		origin = min(origin, off[i])
	}
	for i := range off {
		off[i] -= origin
	}
	slices.Sort(off)
	n := len(arrivals)
	l := serverLag{Arrived: int64(n), P50: rank(off, 0.50) / 1e6, P99: rank(off, 0.99) / 1e6, Max: off[n-1] / 1e6,
		Origin: arrivals[0] + int64(math.Round(origin))}
	if span := arrivals[n-1] - arrivals[0]; n > 1 && span > 0 {
		l.Achieved = float64(n-1) / (float64(span) / 1e9)
	}
	return l, nil
}

// rank returns the q-quantile of sorted values by the nearest-rank method.
func rank(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// readArrivals reads a mock-server arrival log.
func readArrivals(path string) ([]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a, err := mockserver.ReadArrivalLog(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}
