//go:build unix

package clickhouse

import (
	"errors"
	"io"
	"syscall"
)

// check reports whether an idle connection is still open: a non-blocking
// read finds nothing to read (as clickhouse-go checks the connections of
// its pool). The server closing it (a restart, an idle timeout) shows as
// end of file; any byte is unexpected on an idle connection.
func (c *chgoNetConn) check() error {
	if c.dead.Load() {
		return errChgoAborted
	}
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var rerr error
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, err := syscall.Read(int(fd), b[:])
		switch {
		case n == 0 && err == nil:
			rerr = io.EOF
		case n > 0:
			rerr = errors.New("unexpected data on an idle connection")
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		default:
			rerr = err
		}
		return true
	})
	if err != nil {
		return err
	}
	return rerr
}
