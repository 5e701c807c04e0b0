// Package clickhouse is the ClickHouse sink: it plans the INSERT for a target
// table from the table's own description, inserts chunks as Native blocks
// encoded straight from their column buffers (sent with ch-go; queries and
// DDL go through clickhouse-go), classifies insert errors as permanent or transient,
// and runs one worker per shard that batches queued chunks, retries transient
// failures and reports durably written chunks back to the source.
//
// The native protocol is the only one used: clickhouse-go's HTTP transport
// does not work with older servers (18.16 is what the tests run against),
// while the native one works with every server from 18.16 to current ones.
package clickhouse

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Options configures a connection pool to one ClickHouse table.
type Options struct {
	// Addr lists host:port addresses of the native protocol (port 9000 by
	// default on the server side).
	Addr []string
	// Database holds Table. Empty means the user's default database, which
	// Connect resolves once with currentDatabase().
	Database, Table string
	User, Password  string
	// PasswordFunc, when set, gives the password of every new connection
	// instead of Password: a password_file read again, so that a rotated
	// secret is picked up at the next reconnect. When it fails, the last
	// password it gave (Password at first) is used, and a warning logged.
	// With it set, a login the server refuses during an insert is
	// retried (the file may be about to change) rather than permanent.
	PasswordFunc func() (string, error)
	// TLS, when not nil, connects over TLS (the server's secure native
	// port, tcp_port_secure), for inserts and queries alike.
	TLS *tls.Config
	// DialTimeout bounds opening one connection (and the initial ping).
	// Zero means the driver's default (30 s).
	DialTimeout time.Duration
	// InsertTimeout bounds one insert attempt: preparing the batch, encoding
	// and sending it, and the server's answer. Zero means no bound. An
	// attempt that runs into it is a transient error and is retried.
	InsertTimeout time.Duration
	// Settings are sent with every query. Values from YAML arrive as int,
	// int64, float64, bool or string; see convertSettings for what is sent.
	Settings map[string]any
	// Compression of the native protocol: "" or "none", "lz4", "zstd", or
	// "auto": none when every address is on this host (a loopback IP or
	// localhost), lz4 otherwise.
	Compression string
	// Columns maps target column -> source field, for the columns whose
	// field has another name; every other insertable column is fed by the
	// source field of its own name (Mapping).
	Columns map[string]string
	// Exclude names columns left out of the INSERT: the server fills them
	// with their DEFAULT.
	Exclude []string
	// Lazy returns a client even when the server does not answer the
	// first ping (a replica that is down at startup); Database must be
	// set. Its breaker and retries deal with it once inserts start.
	Lazy bool
	// MaxOpenConns caps the pool. Zero means the driver's default (10).
	// Size it to at least the sum of MaxInflight over the shards using this
	// client plus one.
	MaxOpenConns int
	// WholeBlocks sends every insert as one Native block, never in pieces
	// (pieces.go). Set under exactly-once delivery, where a block's part
	// is its identity for the server's deduplication, so a replayed block
	// must be written with the same bytes as the original. 18.16 writes
	// the same part from one block and from squashed pieces (checked for
	// String, Nullable and LowCardinality columns, the last with
	// different dictionaries in each piece), but the guarantee would then
	// rest on the squashing of every server version; one block does not.
	WholeBlocks bool
}

// Client is a native-protocol connection pool to one table.
type Client struct {
	conn     driver.Conn
	log      *slog.Logger
	opts     Options
	db       string
	version  string
	timezone string // the server's timezone(), from its hello
	settings ch.Settings
	// chgo is the insert path's connection pool (chgo.go).
	chgo *chgoPool
	// squashed: the server's squashing of an INSERT's blocks, read on
	// the first insert (pieces.go).
	squashed atomic.Pointer[squashLimits]
	// secret gives each new connection's password.
	secret *secret
}

// secret is the password of new connections: Options.PasswordFunc's
// answer, or the last good one when it fails.
type secret struct {
	fn  func() (string, error) // nil: last never changes
	log *slog.Logger
	mu  sync.Mutex
	// last is the password last given.
	last string
}

// get returns the password for a new connection.
func (s *secret) get() string {
	if s.fn == nil {
		return s.last
	}
	pw, err := s.fn()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.log.Warn("clickhouse password file cannot be read: using the last password read", slog.Any("error", err))
		return s.last
	}
	s.last = pw
	return pw
}

// Connect opens the connection pool, pings the server and reads its version.
// It does not check that the table exists: Describe and Plan do.
func Connect(ctx context.Context, o Options, log *slog.Logger) (*Client, error) {
	if log == nil {
		log = slog.Default()
	}
	if len(o.Addr) == 0 {
		return nil, errors.New("clickhouse: no address configured")
	}
	if o.Table == "" {
		return nil, errors.New("clickhouse: no table configured")
	}
	settings, err := convertSettings(o.Settings)
	if err != nil {
		return nil, err
	}
	o.Compression = resolveCompression(o.Compression, o.Addr)
	method, err := compression(o.Compression)
	if err != nil {
		return nil, err
	}
	opts := &ch.Options{
		Protocol: ch.Native,
		Addr:     o.Addr,
		Auth: ch.Auth{
			Database: o.Database,
			Username: o.User,
			Password: o.Password,
		},
		DialTimeout:  o.DialTimeout,
		Settings:     settings,
		MaxOpenConns: o.MaxOpenConns,
		Logger:       driverLog(log),
		TLS:          o.TLS,
	}
	sec := &secret{fn: o.PasswordFunc, log: log, last: o.Password}
	if o.PasswordFunc != nil {
		opts.Auth.Password = sec.get()
		// Each connection the driver opens logs in with the password
		// read now: a copy of the options carries it to that connection
		// (the driver keeps the options a connection was dialled with).
		opts.DialStrategy = func(ctx context.Context, connID int, opt *ch.Options, dial ch.Dial) (ch.DialResult, error) {
			own := *opt
			own.Auth.Password = sec.get()
			return ch.DefaultDialStrategy(ctx, connID, &own, dial)
		}
	}
	if o.MaxOpenConns > 0 && o.MaxOpenConns < 5 {
		// The driver's default idle pool (5) must not exceed the open cap.
		opts.MaxIdleConns = o.MaxOpenConns
	}
	// Inserts and pings go through the pool of ch-go connections: the
	// driver's serve Describe and the other queries, and must not sit idle
	// (an idle connection holds a server's graceful shutdown for seconds).
	opts.ConnMaxLifetime = driverConnLifetime
	if method != ch.CompressionNone {
		opts.Compression = &ch.Compression{Method: method}
	}
	conn, err := ch.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("clickhouse %v: open: %w", o.Addr, err)
	}
	c := &Client{conn: conn, log: log, opts: o, settings: settings, secret: sec}
	if err := conn.Ping(ctx); err != nil {
		if _, isServer := exceptionCode(err); !isServer {
			err = withTLSHint(o.Addr, o.TLS != nil, withPortHint(o.Addr, err))
		}
		if _, isServer := exceptionCode(err); o.Lazy && o.Database != "" && !isServer {
			log.Warn("clickhouse does not answer yet", slog.Any("addr", o.Addr), slog.Any("error", err))
			c.db = o.Database
			if err := c.openPool(); err != nil {
				_ = conn.Close()
				return nil, err
			}
			return c, nil
		}
		_ = conn.Close()
		if code, ok := exceptionCode(err); ok && code == codeUnknownDatabase {
			return nil, fmt.Errorf("clickhouse %v: database %s does not exist: %w", o.Addr, o.Database, err)
		}
		if code, ok := exceptionCode(err); ok && authCodes[code] != "" {
			return nil, fmt.Errorf("clickhouse %v: the server refuses user %q (check sink.clickhouse.user and password or password_file): %w", o.Addr, o.User, err)
		}
		return nil, fmt.Errorf("clickhouse %v: ping: %w", o.Addr, err)
	}
	sv, err := conn.ServerVersion()
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("clickhouse %v: read server version: %w", o.Addr, err)
	}
	c.version = sv.Version.String()
	if err := checkRevision(strings.Join(o.Addr, ","), c.version, int(sv.Revision)); err != nil {
		_ = conn.Close()
		return nil, err
	}
	if sv.Timezone != nil {
		// The server's timezone(), from its hello: the zone of its
		// DateTime columns without one of their own.
		c.timezone = sv.Timezone.String()
	}
	c.db = o.Database
	if c.db == "" {
		if err := conn.QueryRow(ctx, "SELECT currentDatabase()").Scan(&c.db); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("clickhouse %v: read current database: %w", o.Addr, err)
		}
	}
	if err := c.openPool(); err != nil {
		_ = conn.Close()
		return nil, err
	}
	log.Info("connected to clickhouse",
		slog.Any("addr", o.Addr), slog.String("server_version", c.version),
		slog.String("table", c.TableName()), slog.String("compression", method.String()))
	return c, nil
}

// openPool opens the insert path's pool of ch-go connections.
func (c *Client) openPool() error {
	p, err := newChgoPool(c.opts, c.db, c.settings, c.secret, c.log)
	if err != nil {
		return err
	}
	c.chgo = p
	return nil
}

// Addr names the client's server(s), for logs and metric labels.
func (c *Client) Addr() string { return strings.Join(c.opts.Addr, ",") }

// Ping checks that the server answers (on the insert path's connections).
func (c *Client) Ping(ctx context.Context) error { return c.chgo.ping(ctx) }

// ServerVersion is the server's version as major.minor.patch.
func (c *Client) ServerVersion() string { return c.version }

// ServerTimezone is the server's time zone (its timezone(), "Etc/UTC"),
// the zone of a DateTime or DateTime64 column without one of its own; ""
// when the server did not say.
func (c *Client) ServerTimezone() string { return c.timezone }

// Database is the database holding the table (resolved when not configured).
func (c *Client) Database() string { return c.db }

// TableName is db.table, as errors and logs name it.
func (c *Client) TableName() string { return c.db + "." + c.opts.Table }

// Close closes every connection of the pool.
//
// The driver's Close can hang for good (clickhouse-go issue 1990: its idle
// pool's Close waits, holding a lock, for a goroutine that a tick of the
// pool's ticker has just sent for that lock), so it is given
// driverCloseTimeout: past it, Close logs the hang and returns, leaving
// that goroutine and the idle connections to the process's exit.
func (c *Client) Close() error {
	if c.chgo != nil {
		c.chgo.close()
	}
	done := make(chan error, 1)
	go func() { done <- c.conn.Close() }()
	t := time.NewTimer(driverCloseTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("clickhouse %s: close: %w", c.TableName(), err)
		}
	case <-t.C:
		c.log.Warn("the ClickHouse driver's Close did not return: left behind (clickhouse-go issue 1990)",
			slog.String("table", c.TableName()), slog.Duration("waited", driverCloseTimeout))
	}
	return nil
}

// driverCloseTimeout bounds the driver's Close (see Client.Close).
var driverCloseTimeout = 5 * time.Second

// resolveCompression turns "auto" into "none" when every address is on
// this host and "lz4" otherwise; other values are returned as they are.
// Over loopback, compressing only spends CPU on both sides (etl's lz4 and
// the server's decompression) to save bytes that never cross a network.
// Names other than localhost are not resolved: what a name points to can
// change while the pipeline runs.
func resolveCompression(s string, addrs []string) string {
	if !strings.EqualFold(s, "auto") {
		return s
	}
	for _, a := range addrs {
		if !loopbackAddr(a) {
			return "lz4"
		}
	}
	return "none"
}

// loopbackAddr reports whether addr (host:port or host) names this host: a
// loopback IP or localhost.
func loopbackAddr(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func compression(s string) (ch.CompressionMethod, error) {
	switch strings.ToLower(s) {
	case "", "none":
		return ch.CompressionNone, nil
	case "lz4":
		return ch.CompressionLZ4, nil
	case "zstd":
		return ch.CompressionZSTD, nil
	}
	return 0, fmt.Errorf("clickhouse: compression %q: want auto, none, lz4 or zstd", s)
}

// convertSettings turns settings as decoded from YAML into the Go types the
// driver sends.
//
// Servers with a protocol revision below 54429 (18.16 speaks 54412) receive
// each setting as a varint and the driver accepts only Go int and bool for them:
// any other type (int64, uint64, float64, string) makes every query fail with
// "query setting X has unsupported data type". So integer-valued numbers
// become int and bools stay bool. Strings, and numbers that are not whole,
// are passed as strings: newer servers receive every setting as a string and
// accept them, 18.16 rejects them.
func convertSettings(in map[string]any) (ch.Settings, error) {
	out := make(ch.Settings, len(in))
	for k, v := range in {
		switch v := v.(type) {
		case bool:
			out[k] = v
		case int:
			out[k] = v
		case int8:
			out[k] = int(v)
		case int16:
			out[k] = int(v)
		case int32:
			out[k] = int(v)
		case int64:
			if int64(int(v)) != v {
				return nil, fmt.Errorf("clickhouse: setting %s: value %d does not fit in int", k, v)
			}
			out[k] = int(v)
		case uint:
			if v > math.MaxInt {
				return nil, fmt.Errorf("clickhouse: setting %s: value %d does not fit in int", k, v)
			}
			out[k] = int(v)
		case uint8:
			out[k] = int(v)
		case uint16:
			out[k] = int(v)
		case uint32:
			out[k] = int(v)
		case uint64:
			if v > math.MaxInt {
				return nil, fmt.Errorf("clickhouse: setting %s: value %d does not fit in int", k, v)
			}
			out[k] = int(v)
		case float32:
			out[k] = floatSetting(float64(v))
		case float64:
			out[k] = floatSetting(v)
		case string:
			out[k] = v
		default:
			return nil, fmt.Errorf("clickhouse: setting %s: value %v of type %T: want a number, bool or string", k, v, v)
		}
	}
	return out, nil
}

func floatSetting(f float64) any {
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return int(f)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
