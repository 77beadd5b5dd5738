//go:build unix

package devserver

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// unread reports whether bytes have come on c that the server has not read yet; false when it
// cannot tell.
func unread(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var n int
	var b [1]byte
	raw.Control(func(fd uintptr) { n, _, _ = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT) })
	return n > 0
}
