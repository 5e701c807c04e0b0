//go:build !unix

package clickhouse

// check reports whether an idle connection is still open; without a
// non-blocking read, only a connection whose insert was aborted is known
// to be closed (a connection idle long enough is pinged).
func (c *chgoNetConn) check() error {
	if c.dead.Load() {
		return errChgoAborted
	}
	return nil
}
