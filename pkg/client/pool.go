package client

import (
	"net/url"
	"time"
)

// Pool is a run's clients, one per endpoint (--base-url given more than
// once; the same configuration but the URL), and the picker that chooses
// among several when a request is sent.
type Pool struct {
	clients []*Client
	urls    []string
	// live tells the endpoints that answered the model check (Check); all
	// of them until it runs.
	live   []bool
	picker Picker // nil with one endpoint
}

// Picker chooses the endpoint of a request at send time and is told when
// it ends (balance.Picker: round-robin, least-inflight, session).
type Picker interface {
	// Acquire returns the endpoint (from 0) of a request whose schedule
	// planned it for endpoint planned (-1: none planned).
	Acquire(planned int) int
	// Release ends a request at endpoint i.
	Release(i int)
}

// NewPool makes the client of every endpoint in urls (each a server root,
// without a trailing slash), configured as cfg but for the URL; with
// several, pick(n) makes the picker that spreads the requests the schedule
// leaves to send time over the n endpoints.
func NewPool(cfg Config, urls []string, pick func(n int) Picker) (*Pool, error) {
	p := &Pool{urls: urls, live: make([]bool, len(urls))}
	for i, u := range urls {
		c := cfg
		c.BaseURL = u
		cli, err := New(c)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.clients = append(p.clients, cli)
		p.live[i] = true
	}
	if len(p.clients) > 1 {
		p.picker = pick(len(p.clients))
	}
	return p, nil
}

// Len is the number of endpoints.
func (p *Pool) Len() int { return len(p.clients) }

// Client is the client of endpoint i (from 0).
func (p *Pool) Client(i int) *Client { return p.clients[i] }

// First is the first endpoint's client (what every endpoint's share: chat
// or not).
func (p *Pool) First() *Client { return p.clients[0] }

// RequestID is the X-Request-Id of the request whose record has index and
// turn ("": the clients send none; Config.RequestIDPrefix).
func (p *Pool) RequestID(index int64, turn int) string {
	if prefix := p.clients[0].cfg.RequestIDPrefix; prefix != "" {
		return RequestID(prefix, index, turn)
	}
	return ""
}

// Live reports whether endpoint i answered the model check.
func (p *Pool) Live(i int) bool { return p.live[i] }

// Host is endpoint i's host and port, without a password or path, as
// messages name it.
func (p *Pool) Host(i int) string { return urlHost(p.urls[i]) }

// Acquire returns the client a request goes to (planned: the schedule's
// choice, -1 at send time) and notes it in res; Release must follow.
func (p *Pool) Acquire(planned int, res *Result) *Client {
	if p.picker == nil {
		return p.clients[0]
	}
	i := p.picker.Acquire(planned)
	res.Endpoint = i + 1
	return p.clients[i]
}

// Release ends the request of res at its endpoint.
func (p *Pool) Release(res *Result) {
	if p.picker != nil && res.Endpoint > 0 {
		p.picker.Release(res.Endpoint - 1)
	}
}

// SetModel sets the model of every endpoint's client.
func (p *Pool) SetModel(m string) {
	for _, c := range p.clients {
		c.SetModel(m)
	}
}

// SetEpoch sets the instant every client's Result offsets are measured
// from.
func (p *Pool) SetEpoch(t time.Time) {
	for _, c := range p.clients {
		c.SetEpoch(t)
	}
}

// Close closes every client's idle connections: the server sees the run's
// connections close with it.
func (p *Pool) Close() {
	for _, c := range p.clients {
		c.CloseIdleConnections()
	}
}

// urlHost is base's host and port, without a password or path.
func urlHost(base string) string {
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		return u.Host
	}
	return base
}

// Unwritten is the number of requests started on any of the pool's
// clients and not yet written (Client.Unwritten).
func (p *Pool) Unwritten() int64 {
	var n int64
	for _, c := range p.clients {
		n += c.Unwritten()
	}
	return n
}
