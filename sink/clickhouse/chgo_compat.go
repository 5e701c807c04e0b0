package clickhouse

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/ch-go/proto"
)

// ch-go and servers older than ClickHouse 19.9.
//
// ch-go (v0.75) writes the client info block of a Query packet only when
// the negotiated protocol revision is 54420 (CLIENT_WRITE_INFO, ClickHouse
// 19.9) or later, but servers read it from revision 54032 on. With an older
// server (18.16 speaks 54412) the server takes the bytes after the query id
// for settings and refuses every query: "UNKNOWN_SETTING (115): Unknown
// setting \x00(". ch-go also drops every per-query setting below revision
// 54429, where settings were sent as binary values.
//
// For those servers the connection completes the Query packet itself: the
// first write of an insert starts with the Query packet (ch-go encodes it,
// and the empty block ending external data, into its buffer and then
// flushes), and the connection inserts, right after the query id, the
// client info ch-go would write for that revision and the settings in the
// binary form clickhouse-go sends them in (a varint; only int and bool
// values, as with the driver). Nothing else differs for those revisions:
// the rest of the protocol ch-go speaks there was checked against 18.16
// (handshake, ping, data blocks with lz4, zstd and no compression,
// exceptions, progress and profile packets).
// Servers from 19.9 on go through untouched; between revisions 54420 and
// 54429 (19.9 to 19.x) ch-go would drop the settings, so a client with
// settings uses the driver path there.
const (
	chgoRevClientInfo       = 54420 // ch-go writes client info from here
	chgoRevStringSettings   = 54429 // settings sent as strings from here
	chgoRevMinClientInfo    = 54032 // servers read client info from here
	chgoRevQuotaKeyInfo     = 54060
	chgoRevVersionPatchInfo = 54401
)

// chgoDialer dials the connection a ch-go client uses and keeps it.
type chgoDialer struct {
	timeout time.Duration
	tls     *tls.Config // nil: plain TCP
	conn    *chgoNetConn
}

// DialContext opens the connection, over TLS when d.tls is set: the
// handshake is done here, and chgoNetConn wraps the TLS connection, so
// that its Query patches go into the plaintext stream (ch-go's own TLS
// option wants a *net.Dialer, which would bypass chgoNetConn).
func (d *chgoDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := net.Dialer{Timeout: d.timeout}
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if d.tls != nil {
		cfg := d.tls
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			if host, _, err := net.SplitHostPort(addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(c, cfg)
		hctx, cancel := context.WithTimeout(ctx, d.timeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		c = tc
	}
	d.conn = &chgoNetConn{Conn: c}
	return d.conn, nil
}

// errChgoAborted is the I/O error of a connection whose insert's context
// ended.
var errChgoAborted = errors.New("insert aborted: its context ended")

// chgoNetConn is a ch-go client's connection: it stops all I/O when the
// insert's context ends (abort), and completes Query packets for old
// servers (arm).
type chgoNetConn struct {
	net.Conn
	dead atomic.Bool

	mu    sync.Mutex
	patch []byte // inserted after the query id of the next Query packet
}

func (c *chgoNetConn) abort() {
	c.dead.Store(true)
	_ = c.Conn.SetDeadline(time.Now())
}

func (c *chgoNetConn) aborted() bool { return c.dead.Load() }

func (c *chgoNetConn) Read(p []byte) (int, error) {
	if c.dead.Load() {
		return 0, errChgoAborted
	}
	return c.Conn.Read(p)
}

func (c *chgoNetConn) Write(p []byte) (int, error) {
	if c.dead.Load() {
		return 0, errChgoAborted
	}
	c.mu.Lock()
	patch := c.patch
	c.patch = nil
	c.mu.Unlock()
	if patch == nil {
		return c.Conn.Write(p)
	}
	// p starts with the Query packet: its code, then the query id.
	if len(p) == 0 || p[0] != byte(proto.ClientCodeQuery) {
		return 0, errors.New("clickhouse: chgo compatibility: the insert's first write is not a Query packet")
	}
	idLen, n := binary.Uvarint(p[1:])
	at := 1 + n + int(idLen)
	if n <= 0 || at > len(p) {
		return 0, errors.New("clickhouse: chgo compatibility: cannot read the Query packet's id")
	}
	out := make([]byte, 0, len(p)+len(patch))
	out = append(out, p[:at]...)
	out = append(out, patch...)
	out = append(out, p[at:]...)
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *chgoNetConn) arm(patch []byte) {
	c.mu.Lock()
	c.patch = patch
	c.mu.Unlock()
}

func (c *chgoNetConn) disarm() { c.arm(nil) }

// compat decides, once the server's revision is known, whether the pool
// can serve it, and checks the settings the shim would send.
func (p *chgoPool) compat(cn *chgoConn) error {
	switch {
	case cn.rev >= chgoRevStringSettings:
	case cn.rev >= chgoRevClientInfo:
		if len(p.settings) > 0 {
			p.driverOnly.Store(true)
			p.warned.Do(func() {
				p.log.Warn("this server's protocol revision makes ch-go drop per-query settings: inserting through the driver's column API",
					slog.Int("revision", cn.rev))
			})
		}
	case cn.rev < chgoRevMinClientInfo:
		p.driverOnly.Store(true)
		p.warned.Do(func() {
			p.log.Warn("server too old for the chgo insert path: inserting through the driver's column API", slog.Int("revision", cn.rev))
		})
	}
	return nil
}

// armCompat prepares the connection to complete the Query packet of query
// qid when the server needs it.
func (cn *chgoConn) armCompat(qid string) error {
	if cn.rev >= chgoRevClientInfo {
		return nil
	}
	var b proto.Buffer
	// The client info, as ch-go's proto.ClientInfo writes it for this
	// revision (quota key from 54060, version patch from 54401).
	b.PutByte(byte(proto.ClientQueryInitial))
	b.PutString("")  // initial user
	b.PutString(qid) // initial query id
	b.PutString(cn.nc.LocalAddr().String())
	b.PutByte(byte(proto.InterfaceTCP))
	b.PutString("") // OS user
	b.PutString("") // client hostname
	b.PutString(proto.Name + " etl")
	b.PutInt(1) // client version major
	b.PutInt(0) // minor
	b.PutInt(cn.rev)
	if cn.rev >= chgoRevQuotaKeyInfo {
		b.PutString("")
	}
	if cn.rev >= chgoRevVersionPatchInfo {
		b.PutInt(0)
	}
	// The settings, as clickhouse-go writes them below revision 54429:
	// name, then the value as a varint; ch-go writes the terminator.
	for k, v := range cn.settings {
		var u uint64
		switch v := v.(type) {
		case int:
			u = uint64(v)
		case bool:
			if v {
				u = 1
			}
		default:
			return fmt.Errorf("query setting %s has unsupported data type", k)
		}
		b.PutString(k)
		b.PutUVarInt(u)
	}
	cn.nc.arm(b.Buf)
	return nil
}
