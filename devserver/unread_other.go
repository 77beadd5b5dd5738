//go:build !unix

package devserver

import "net"

func unread(net.Conn) bool { return false }
