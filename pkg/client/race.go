//go:build race

package client

// raceEnabled: the race detector orders a socket's write before the peer's
// read only for write(2), which the syscall package annotates; writev goes
// around it. Under -race the transport therefore sends head and body in one
// write, so programs that test with the detector see no false races.
const raceEnabled = true
