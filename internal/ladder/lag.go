package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

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
	gap := 1e9 / rate
	return lagAgainst(arrivals, func(i int) float64 { return float64(i) * gap })
}

// lagFromSchedule is lagFromArrivals for any schedule: due holds the
// offsets from its start at which the requests were due, in order (a
// schedule CSV's time_s).
func lagFromSchedule(arrivals []int64, due []time.Duration) (serverLag, error) {
	if len(arrivals) > len(due) {
		return serverLag{}, fmt.Errorf("%d requests reached the server, but only %d were scheduled", len(arrivals), len(due))
	}
	return lagAgainst(arrivals, func(i int) float64 { return float64(due[i]) })
}

// lagAgainst matches the i-th arrival with the i-th due offset (ns).
func lagAgainst(arrivals []int64, due func(i int) float64) (serverLag, error) {
	if len(arrivals) == 0 {
		return serverLag{}, errors.New("no request reached the server")
	}
	// Offsets from the first arrival keep float64 exact to the nanosecond
	// (Unix ns themselves are beyond its 2^53).
	off := make([]float64, len(arrivals))
	origin := math.Inf(1)
	for i, a := range arrivals {
		if i > 0 && a < arrivals[i-1] {
			return serverLag{}, fmt.Errorf("arrival %d is before arrival %d", i, i-1)
		}
		off[i] = float64(a-arrivals[0]) - due(i)
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

// readSchedule reads the due offsets of a schedule CSV (--schedule-out):
// its index and time_s columns, index counting from 0.
func readSchedule(r io.Reader) ([]time.Duration, error) {
	sc := bufio.NewScanner(r)
	var due []time.Duration
	line := 0
	for sc.Scan() {
		line++
		if line == 1 {
			if !strings.HasPrefix(sc.Text(), "index,time_s,") {
				return nil, errors.New("line 1: want the header index,time_s,…")
			}
			continue
		}
		f := strings.SplitN(sc.Text(), ",", 3)
		if len(f) < 3 {
			return nil, fmt.Errorf("line %d: want index,time_s,…", line)
		}
		i, err1 := strconv.ParseInt(f[0], 10, 64)
		t, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil || !(t >= 0) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("line %d: index or time_s is not a number", line)
		}
		if i != int64(len(due)) {
			return nil, fmt.Errorf("line %d: index %d, want %d", line, i, len(due))
		}
		due = append(due, time.Duration(math.Round(t*1e9)))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if len(due) == 0 {
		return nil, errors.New("no arrivals")
	}
	return due, nil
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
