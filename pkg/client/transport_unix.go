//go:build unix

package client

import (
	"syscall"
)

// alive reports whether an idle connection is still usable: the peer has
// neither closed it nor sent anything unsolicited. It peeks at the socket
// without blocking (one system call, no allocation: the raw connection
// and the peek are made once per connection).
func (c *leanConn) alive() bool {
	if c.peek == nil {
		sc, ok := c.nc.(syscall.Conn)
		if !ok {
			return true
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			return false
		}
		var buf [1]byte
		c.raw = rc
		c.peek = func(fd uintptr) bool {
			// EAGAIN: open and quiet. 0 bytes: closed. Bytes: a response
			// nobody asked for. An error: broken.
			_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			c.usable = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
			return true // never wait for readability
		}
	}
	c.usable = false
	err := c.raw.Read(c.peek)
	return err == nil && c.usable
}
