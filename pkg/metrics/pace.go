package metrics

import (
	"strconv"
	"time"
)

// Pace is how fast the client handed its schedule's arrivals to its
// senders against how fast they were due, over a whole run: the windows'
// backlog check (Backlog) judges the client while it runs; this judges
// the rate it achieved in the end, which a run shorter than a backlog
// span, or one whose schedule ran out early in a long window, shows too.
// Its Offer is told of every arrival offered; it keeps a few numbers,
// whatever the run's length.
type Pace struct {
	// Offered counts the arrivals handed to a sender (offered); LastDue is
	// the latest due offset among them, LastOffered the offset at which the
	// last of them was offered.
	Offered              int64
	LastDue, LastOffered time.Duration
	// ring holds the least lateness of the arrivals offered in each
	// paceBucket of the last BacklogSpan (by the time they were offered).
	ring [paceBuckets]paceSlot
}

type paceSlot struct {
	bucket int64 // the bucket's number + 1 (0: empty)
	least  time.Duration
}

const (
	paceBucket  = 50 * time.Millisecond
	paceBuckets = int(BacklogSpan/paceBucket) + 1
)

// Offer counts an arrival due at offset due and offered at offset at.
func (p *Pace) Offer(due, at time.Duration) {
	p.Offered++
	p.LastDue, p.LastOffered = max(p.LastDue, due), max(p.LastOffered, at)
	b := int64(max(at, 0) / paceBucket)
	late := max(at-due, 0)
	s := &p.ring[b%int64(paceBuckets)]
	if s.bucket != b+1 {
		s.bucket, s.least = b+1, late
	} else {
		s.least = min(s.least, late)
	}
}

// sustained is how late the arrivals offered at the end of the run were,
// the least over the last BacklogSpan of offers (a quarter of the time to
// the last offer when that is shorter): a moment's stall at the end — the
// machine busy, a collection — does not count, a backlog does.
func (p *Pace) sustained() time.Duration {
	stretch := min(BacklogSpan, p.LastOffered/4)
	last := int64(p.LastOffered / paceBucket)
	least := time.Duration(-1)
	for b := int64(max(p.LastOffered-stretch, 0) / paceBucket); b <= last; b++ {
		if s := p.ring[b%int64(paceBuckets)]; s.bucket == b+1 && (least < 0 || s.least < least) {
			least = s.least
		}
	}
	return max(least, 0)
}

// Thresholds of the send-rate check.
const (
	// PaceShortShare: the achieved send rate fell short when the arrivals
	// offered at the end were late by more than this share of the
	// schedule's span…
	PaceShortShare = 0.10
	// PaceShortLate: …and by at least this long (a few milliseconds' delay
	// at the end of a short schedule is not a shortfall).
	PaceShortLate = SaturationBehind
)

// SendRate is a send rate that fell short of the schedule's (the
// summary's send_rate_* keys).
type SendRate struct {
	// Scheduled is the rate the arrivals offered were due at (offered / the
	// due offset of the latest), Achieved the rate they were offered at
	// (offered / the offset of the last offer), in requests per second.
	Scheduled, Achieved float64
	// Shortfall is 1 − Achieved/Scheduled.
	Shortfall float64
	// LastLate is how late the last arrival was offered, in seconds.
	LastLate float64
}

// Short returns the send rate when it fell short of the schedule's: the
// arrivals offered over the run's last stretch (see sustained) were all
// late by PaceShortLate or more, and by more than PaceShortShare of the
// span they were due over; nil when they were not, or when it cannot be
// told (fewer than two arrivals offered, or all due at once).
func (p *Pace) Short() *SendRate {
	if p.Offered < 2 || p.LastDue <= 0 || p.LastOffered <= p.LastDue {
		return nil
	}
	late := p.sustained()
	if late < PaceShortLate || float64(late) <= PaceShortShare*float64(p.LastDue+late) {
		return nil
	}
	r := &SendRate{
		Scheduled: float64(p.Offered) / p.LastDue.Seconds(),
		Achieved:  float64(p.Offered) / p.LastOffered.Seconds(),
		LastLate:  (p.LastOffered - p.LastDue).Seconds(),
	}
	r.Shortfall = 1 - r.Achieved/r.Scheduled
	return r
}

// Reason says in one line how far the send rate fell short.
func (r *SendRate) Reason() string {
	return "the achieved send rate fell short of the schedule's: " + ftoa(r.Achieved, 1) + " req/s of the " +
		ftoa(r.Scheduled, 1) + " req/s scheduled (" + ftoa(100*r.Shortfall, 1) + " % short; the last request was sent " +
		ftoa(r.LastLate, 2) + " s after its due time)"
}

// Cause says what the evidence tells of why the client could not keep
// the schedule: its CPU over the run as a share of its cores (cpu, nil:
// not measured) on a machine of cores cores.
func (r *SendRate) Cause(cpu *float64, cores int) string {
	switch {
	case cpu == nil:
		return "the client could not hand out its arrivals as fast as they were due (its CPU was not measured)"
	case *cpu >= SaturationCPU:
		return "the client is short of CPU: it used " + fmtPct(*cpu) + " of its " + strconv.Itoa(cores) + " cores"
	}
	return "the client could not hand out its arrivals as fast as they were due, using " + fmtPct(*cpu) + " of its " +
		strconv.Itoa(cores) + " cores over the run: the rest went to other processes (a server under test on the same machine counts) or to waits; " +
		"lower the rate, or give the client more cores"
}
