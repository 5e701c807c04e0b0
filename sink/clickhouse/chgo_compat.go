package clickhouse

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/ch-go/proto"
	ch "github.com/ClickHouse/clickhouse-go/v2"
)

// ch-go and servers older than ClickHouse 19.x's protocol revision 54429.
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
// flushes), and the connection inserts what ch-go left out where the
// server reads it: below revision 54420, right after the query id, the
// client info ch-go would write for that revision, then the settings;
// from 54420 to 54428, after the client info ch-go wrote, the settings.
// Settings go in the binary form clickhouse-go sends them in (a varint;
// only int and bool values). Nothing else differs for those revisions: the
// rest of the protocol ch-go speaks was checked against 18.16 (handshake,
// ping, data blocks with lz4, zstd and no compression, exceptions,
// progress and profile packets). Servers from 54429 on go through
// untouched. Servers older than 54032 read no client info at all, and
// are refused (oldServerError).
const (
	chgoRevClientInfo       = 54420 // ch-go writes client info from here
	chgoRevStringSettings   = 54429 // settings sent as strings from here
	chgoRevMinClientInfo    = 54032 // servers read client info from here: the oldest served
	chgoRevQuotaKeyInfo     = 54060
	chgoRevVersionPatchInfo = 54401
)

// oldServerError is a server whose protocol revision is older than the
// oldest the insert path speaks.
type oldServerError struct {
	addr    string
	version string // "" when only the revision is known
	rev     int
}

func (e *oldServerError) Error() string {
	v := ""
	if e.version != "" {
		v = " (ClickHouse " + e.version + ")"
	}
	return fmt.Sprintf("clickhouse %s: the server speaks native protocol revision %d%s; the oldest supported is %d (ClickHouse 1.1.%d): upgrade the server",
		e.addr, e.rev, v, chgoRevMinClientInfo, chgoRevMinClientInfo)
}

// checkRevision refuses a server older than the oldest revision served.
func checkRevision(addr, version string, rev int) error {
	if rev < chgoRevMinClientInfo {
		return &oldServerError{addr: addr, version: version, rev: rev}
	}
	return nil
}

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
	patch []byte // inserted into the next Query packet
	// afterInfo: the patch goes after the client info ch-go wrote (else
	// right after the query id).
	afterInfo bool
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
	patch, afterInfo := c.patch, c.afterInfo
	c.patch = nil
	c.mu.Unlock()
	if patch == nil {
		return c.Conn.Write(p)
	}
	// p starts with the Query packet: its code, then the query id.
	if len(p) == 0 || p[0] != byte(proto.ClientCodeQuery) {
		return 0, errors.New("clickhouse: chgo compatibility: the insert's first write is not a Query packet")
	}
	at, ok := skipString(p, 1)
	if ok && afterInfo {
		at, ok = skipClientInfo(p, at)
	}
	if !ok {
		return 0, errors.New("clickhouse: chgo compatibility: cannot read the Query packet's header")
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

func (c *chgoNetConn) arm(patch []byte, afterInfo bool) {
	c.mu.Lock()
	c.patch, c.afterInfo = patch, afterInfo
	c.mu.Unlock()
}

func (c *chgoNetConn) disarm() { c.arm(nil, false) }

// skipString returns the end of the string (a varint length, then the
// bytes) at p[at:].
func skipString(p []byte, at int) (int, bool) {
	n, k := binary.Uvarint(p[min(at, len(p)):])
	if k <= 0 || n > uint64(len(p)) {
		return 0, false
	}
	end := at + k + int(n)
	return end, end <= len(p)
}

// skipVarint returns the end of the varint at p[at:].
func skipVarint(p []byte, at int) (int, bool) {
	_, k := binary.Uvarint(p[min(at, len(p)):])
	return at + k, k > 0
}

// skipClientInfo returns the end of the client info at p[at:], as ch-go
// writes it for revisions 54420 to 54428 over TCP: the query kind, the
// initial user, query id and address, the interface, the OS user, client
// host and name, the version (major, minor, revision), the quota key and
// the version patch.
func skipClientInfo(p []byte, at int) (int, bool) {
	ok := true
	skip := func(f func([]byte, int) (int, bool), n int) {
		for ; ok && n > 0; n-- {
			at, ok = f(p, at)
		}
	}
	byte1 := func(p []byte, at int) (int, bool) { return at + 1, at < len(p) }
	skip(byte1, 1)      // query kind
	skip(skipString, 3) // initial user, query id, address
	skip(byte1, 1)      // interface
	skip(skipString, 3) // OS user, client hostname, client name
	skip(skipVarint, 3) // major, minor, revision
	skip(skipString, 1) // quota key
	skip(skipVarint, 1) // version patch
	return at, ok
}

// compat refuses a server older than the oldest revision served.
func (p *chgoPool) compat(cn *chgoConn) error {
	return checkRevision(p.addr, "", cn.rev)
}

// armCompat prepares the connection to complete the Query packet of query
// qid when the server needs it.
func (cn *chgoConn) armCompat(qid string) error {
	if cn.rev >= chgoRevStringSettings || cn.rev >= chgoRevClientInfo && len(cn.settings) == 0 {
		return nil
	}
	b, err := compatPatch(cn.rev, qid, cn.nc.LocalAddr().String(), cn.settings)
	if err != nil {
		return err
	}
	cn.nc.arm(b, cn.rev >= chgoRevClientInfo)
	return nil
}

// compatPatch is what ch-go leaves out of a Query packet for revision rev:
// below 54420 the client info (local is the client's address) and the
// settings, from 54420 to 54428 the settings.
func compatPatch(rev int, qid, local string, settings ch.Settings) ([]byte, error) {
	var b proto.Buffer
	if rev < chgoRevClientInfo {
		putClientInfo(&b, rev, qid, local)
	}
	// The settings, as clickhouse-go writes them below revision 54429:
	// name, then the value as a varint; ch-go writes the terminator. In
	// name order, so a packet's bytes do not depend on map order.
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		var u uint64
		switch v := settings[k].(type) {
		case int:
			u = uint64(v)
		case bool:
			if v {
				u = 1
			}
		default:
			return nil, &settingError{name: k, value: v, rev: rev}
		}
		b.PutString(k)
		b.PutUVarInt(u)
	}
	return b.Buf, nil
}

// settingError is a setting whose value a server below revision 54429
// cannot receive (it takes integers and booleans only).
type settingError struct {
	name  string
	value any
	rev   int
}

func (e *settingError) Error() string {
	return fmt.Sprintf("query setting %s = %v: a server of protocol revision %d takes only integer and boolean settings (unsupported data type)", e.name, e.value, e.rev)
}

// putClientInfo writes the client info, as ch-go's proto.ClientInfo
// writes it for revision rev (quota key from 54060, version patch from
// 54401).
func putClientInfo(b *proto.Buffer, rev int, qid, local string) {
	b.PutByte(byte(proto.ClientQueryInitial))
	b.PutString("")  // initial user
	b.PutString(qid) // initial query id
	b.PutString(local)
	b.PutByte(byte(proto.InterfaceTCP))
	b.PutString("") // OS user
	b.PutString("") // client hostname
	b.PutString(proto.Name + " etl")
	b.PutInt(1) // client version major
	b.PutInt(0) // minor
	b.PutInt(rev)
	if rev >= chgoRevQuotaKeyInfo {
		b.PutString("")
	}
	if rev >= chgoRevVersionPatchInfo {
		b.PutInt(0)
	}
}
