package clickhouse

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	chgo "github.com/ClickHouse/ch-go"
	"github.com/ClickHouse/ch-go/proto"
	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/google/uuid"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/sink/clickhouse/native"
)

// The insert path: INSERT blocks are encoded straight from the chunks'
// column buffers (native.Encoder) and sent with ch-go, the native-protocol
// library clickhouse-go is built on. One INSERT is one Native block, or,
// for a batch larger than PieceBytes, a few blocks the server squashes back
// into one before the table sees them (pieces.go); then the end of data.
// Either way a failed insert inserted nothing.
//
// Each Client keeps its own small pool of ch-go connections (ch-go's Client
// is one connection, used by one insert at a time); Ping uses it too.
// Connect's queries, Describe and DDL stay on clickhouse-go. Servers older
// than ch-go's own protocol support get their Query packets completed by
// chgo_compat.go; servers older than protocol revision 54032 are refused.
// A column type the encoder cannot write (none that a chunk column is
// built for, on a little-endian machine) is a permanent error. A target
// whose column types on the server are no longer the planned ones (seen
// in the INSERT's header block before any data is sent) fails with a
// permanent error naming the column, which the shard recovers from by
// converting the batch to the new types.
//
// A server exception stays ch-go's *chgo.Exception in the error's chain:
// exceptionCode reads its code as it reads clickhouse-go's from queries,
// so Permanent and missingColumn classify both. A value the encoder
// refuses is an appendError naming the column and the chunk's source
// spans; network errors and timeouts are transient.

const (
	// chgoIdleCheck: a pooled connection idle longer than this is pinged
	// before an insert uses it, so a connection the server closed in the
	// meantime is replaced instead of failing the insert (and counting
	// against the replica's breaker).
	chgoIdleCheck = 30 * time.Second
	// chgoMaxLifetime: connections older than this are closed instead of
	// reused (clickhouse-go's ConnMaxLifetime default).
	chgoMaxLifetime = time.Hour
	// chgoKeepBytes: a connection whose write buffer grew past this
	// (an insert of a large batch) is closed after the insert rather than
	// pooled, so large buffers are not kept outside the byte budget
	// between inserts.
	chgoKeepBytes = 32 << 20
	// chgoDefaultIdle is how many idle connections a pool keeps when
	// Options.MaxOpenConns is not set.
	chgoDefaultIdle = 4
	// driverConnLifetime is the lifetime of clickhouse-go's connections:
	// they serve Describe and the other queries, and an idle connection
	// holds a server's graceful shutdown for seconds (18.16 checks idle
	// connections every 10 s).
	driverConnLifetime = time.Second
)

// chgoPool is a Client's ch-go connections.
type chgoPool struct {
	log     *slog.Logger
	addr    string
	opts    chgo.Options // Address, Database, User, Password, Compression, timeouts, settings
	maxIdle int
	// settings as the driver sends them, for servers that need the
	// compatibility shim (chgo_compat.go).
	settings ch.Settings
	tls      *tls.Config // nil: plain TCP
	secret   *secret     // the password of each new connection

	mu     sync.Mutex
	idle   []*chgoConn
	closed bool

	pieces atomic.Int64 // blocks sent as pieces of a batch
}

// chgoConn is one ch-go connection and its encoders.
type chgoConn struct {
	cl     *chgo.Client
	nc     *chgoNetConn
	buf    *proto.Buffer // the client's write buffer
	rev    int           // the negotiated protocol revision
	born   time.Time
	used   time.Time
	blocks map[*Target]*chgoBlock
	// settings are the pool's, for the compatibility shim.
	settings ch.Settings
}

// newChgoPool returns the pool for o; database is the resolved database
// and o.Compression is resolved too (Connect turned "auto" into a method).
// sec gives each new connection's password.
func newChgoPool(o Options, database string, settings ch.Settings, sec *secret, log *slog.Logger) (*chgoPool, error) {
	var comp chgo.Compression
	switch strings.ToLower(o.Compression) {
	case "", "none":
		comp = chgo.CompressionDisabled
	case "lz4":
		comp = chgo.CompressionLZ4
	case "zstd":
		comp = chgo.CompressionZSTD
	default:
		return nil, fmt.Errorf("clickhouse: compression %q: want none, lz4 or zstd", o.Compression)
	}
	if len(o.Addr) == 0 {
		return nil, errors.New("clickhouse: no address configured")
	}
	dial := o.DialTimeout
	if dial <= 0 {
		dial = 30 * time.Second // the driver's default
	}
	p := &chgoPool{
		log:      log,
		addr:     strings.Join(o.Addr, ","),
		maxIdle:  chgoDefaultIdle,
		settings: settings,
		tls:      o.TLS,
		secret:   sec,
		opts: chgo.Options{
			// Like the driver's pool, a Client talks to its first address.
			Address:          o.Addr[0],
			Database:         database,
			User:             o.User,
			Compression:      comp,
			ClientName:       "etl",
			DialTimeout:      dial,
			HandshakeTimeout: dial,
		},
	}
	if o.MaxOpenConns > 0 {
		p.maxIdle = o.MaxOpenConns
	}
	for k, v := range settings {
		// Servers of revision 54429 and later take every setting as text,
		// as clickhouse-go sends it.
		p.opts.Settings = append(p.opts.Settings, chgo.Setting{Key: k, Value: fmt.Sprint(v), Important: true})
	}
	return p, nil
}

// get returns an idle connection that still answers, or a new one.
func (p *chgoPool) get(ctx context.Context) (*chgoConn, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, chgo.ErrClosed
		}
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			return p.dial(ctx)
		}
		cn := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		now := time.Now()
		if now.Sub(cn.born) > chgoMaxLifetime || cn.cl.IsClosed() || cn.nc.check() != nil {
			cn.close()
			continue
		}
		if now.Sub(cn.used) > chgoIdleCheck {
			if err := cn.ping(ctx); err != nil {
				cn.close()
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				continue
			}
		}
		return cn, nil
	}
}

// ping checks that the server answers on one of the pool's connections.
func (p *chgoPool) ping(ctx context.Context) error {
	cn, err := p.get(ctx)
	if err == nil {
		err = cn.ping(ctx)
		p.put(cn, err)
	}
	if err != nil {
		return addrError(p.addr, err)
	}
	return nil
}

// addrError prefixes err with the server's address, unless err names it
// already (a dial error does).
func addrError(addr string, err error) error {
	if strings.Contains(err.Error(), addr) {
		return fmt.Errorf("clickhouse: %w", err)
	}
	return fmt.Errorf("clickhouse %s: %w", addr, err)
}

// dial opens a connection.
func (p *chgoPool) dial(ctx context.Context) (*chgoConn, error) {
	d := &chgoDialer{timeout: p.opts.DialTimeout, tls: p.tls}
	opts := p.opts
	opts.Dialer = d
	opts.Password = p.secret.get()
	buf := new(proto.Buffer)
	cl, err := chgo.DialWithBuffer(ctx, opts, buf)
	if err != nil {
		return nil, fmt.Errorf("clickhouse %s: %w", p.addr, err)
	}
	cn := &chgoConn{cl: cl, nc: d.conn, buf: buf, rev: cl.ServerInfo().Revision, born: time.Now(), settings: p.settings}
	cn.used = cn.born
	if err := p.compat(cn); err != nil {
		cn.close()
		return nil, err
	}
	return cn, nil
}

// put returns cn to the pool after an insert that ended with err, or
// closes it: after any error (even a server exception, which may arrive
// while the block is still being written: the connection's state is not
// worth guessing for a rare event), when the insert's context ended while
// it ran, when its buffer grew large, or when the pool is full or closed.
func (p *chgoPool) put(cn *chgoConn, err error) {
	if err != nil || cn.nc.aborted() || cap(cn.buf.Buf) > chgoKeepBytes || cn.cl.IsClosed() {
		cn.close()
		return
	}
	cn.used = time.Now()
	p.mu.Lock()
	if p.closed || len(p.idle) >= p.maxIdle {
		p.mu.Unlock()
		cn.close()
		return
	}
	p.idle = append(p.idle, cn)
	p.mu.Unlock()
}

// close closes the idle connections; connections in use are closed when
// their insert returns them.
func (p *chgoPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, cn := range idle {
		cn.close()
	}
}

func (cn *chgoConn) close() { _ = cn.cl.Close() }

// block returns the connection's encoders for t.
func (cn *chgoConn) block(t *Target) (*chgoBlock, error) {
	if b := cn.blocks[t]; b != nil {
		return b, nil
	}
	if cn.blocks == nil || len(cn.blocks) >= 16 {
		cn.blocks = map[*Target]*chgoBlock{} // targets change rarely
	}
	b := &chgoBlock{cols: make([]chgoColumn, len(t.Schema.Types))}
	for i, typ := range t.Schema.Types {
		enc, err := native.NewEncoder(typ)
		if err != nil {
			// Every type a chunk column is built for is encodable on a
			// little-endian machine: this is a plan no insert can serve.
			return nil, &InsertError{Table: t.Name(), Column: t.Schema.Names[i], Type: typ.Name, Err: &mismatchError{err.Error()}}
		}
		b.cols[i] = chgoColumn{name: t.Schema.Names[i], typ: proto.ColumnType(typ.Name), enc: enc}
		b.input = append(b.input, proto.InputColumn{Name: t.Schema.Names[i], Data: &b.cols[i]})
	}
	cn.blocks[t] = b
	return b, nil
}

// chgoBlock is the Native block of one insert of a target: one encoder per
// column, each over that column of every chunk of the batch.
type chgoBlock struct {
	cols  []chgoColumn
	input proto.Input
	tmp   []chunk.Column
}

// prepare points the encoders at chunks (built for t) and checks their
// values; a value that cannot be written is an *InsertError naming the
// column and the chunk's source spans.
func (b *chgoBlock) prepare(t *Target, chunks []*chunk.Chunk) error {
	for i := range b.cols {
		b.tmp = b.tmp[:0]
		for _, c := range chunks {
			b.tmp = append(b.tmp, c.Cols[t.col(i)])
		}
		if err := b.cols[i].enc.Prepare(b.tmp); err != nil {
			spans := ""
			var ve *native.ValueError
			if errors.As(err, &ve) && ve.Chunk >= 0 && ve.Chunk < len(chunks) {
				spans, err = spansString(chunks[ve.Chunk].Spans), ve.Err
			}
			return &InsertError{
				Table: t.Name(), Column: t.Schema.Names[i], Type: t.Schema.Types[i].Name,
				Err: &appendError{spans: spans, err: err},
			}
		}
	}
	clear(b.tmp)
	return nil
}

// sizeHint is about the size of the encoded block.
func (b *chgoBlock) sizeHint() int {
	n := 0
	for i := range b.cols {
		n += b.cols[i].enc.SizeHint()
	}
	return n
}

// scratch is about the working memory the prepared encoders hold.
func (b *chgoBlock) scratch() int {
	n := 0
	for i := range b.cols {
		n += b.cols[i].enc.Scratch()
	}
	return n
}

// release drops the references to the batch's chunks.
func (b *chgoBlock) release() {
	for i := range b.cols {
		b.cols[i].enc.Release()
	}
}

// chgoColumn is a column of the block as ch-go's proto.ColInput: its
// encoder writes the Native encoding straight into ch-go's buffer.
type chgoColumn struct {
	name string
	typ  proto.ColumnType
	enc  *native.Encoder
}

// Infer implements proto.Inferable: ch-go calls it, before sending any
// data, with the column's type in the server's INSERT header. A type
// other than the planned one means the table changed under the plan: the
// insert fails, having sent no data, with a permanent *chgoTypeDrift, and
// the shard's recovery (recoverable) converts the batch to the table's
// new types.
func (c *chgoColumn) Infer(t proto.ColumnType) error {
	if t != c.typ {
		return &chgoTypeDrift{column: c.name, planned: string(c.typ), server: string(t)}
	}
	return nil
}

// chgoTypeDrift is a column whose type on the server is not the planned
// one (its *InsertError names the column).
type chgoTypeDrift struct{ column, planned, server string }

func (e *chgoTypeDrift) Error() string {
	return fmt.Sprintf("the column is %s on the server, planned as %s", e.server, e.planned)
}

func (c *chgoColumn) Type() proto.ColumnType { return c.typ }

func (c *chgoColumn) Rows() int { return c.enc.Rows() }

func (c *chgoColumn) EncodeColumn(b *proto.Buffer) { b.Buf = c.enc.AppendNative(b.Buf) }

func (c *chgoColumn) WriteColumn(w *proto.Writer) { w.ChainBuffer(c.EncodeColumn) }

var (
	_ proto.ColInput  = (*chgoColumn)(nil)
	_ proto.Inferable = (*chgoColumn)(nil)
)

// insertChgo inserts chunks through the pool's connections. ctx is the
// insert attempt's context (Options.InsertTimeout).
func (c *Client) insertChgo(ctx context.Context, t *Target, chunks []*chunk.Chunk) error {
	p := c.chgo
	query := t.Query + " VALUES"
	cn, err := p.get(ctx)
	if err != nil {
		return &InsertError{Table: t.Name(), Err: err}
	}
	b, err := cn.block(t)
	if err != nil {
		p.put(cn, nil)
		return err
	}
	// A large batch goes in pieces when the server squashes them back
	// into one block (pieces.go); otherwise as one block.
	rows, bytes := 0, 0
	for _, k := range chunks {
		rows += k.Rows
		bytes += k.Size()
	}
	groups := [][]*chunk.Chunk{chunks}
	if c.inPieces(rows, bytes, func() *squashLimits { return c.squash(ctx) }) {
		groups = pieces(nil, chunks)
	}
	// The encoders' working memory (LowCardinality dictionaries,
	// converted values) is counted in the budget the shard gave, as each
	// block is prepared, until the insert ends.
	held := heldCounter(ctx)
	defer held.set(0)
	if err := b.prepare(t, groups[0]); err != nil {
		b.release()
		p.put(cn, nil)
		return err
	}
	held.set(b.scratch())
	// The block is encoded into the connection's buffer (and compressed
	// from there): grow it once, not by doubling, on a fresh connection.
	cn.buf.Buf = slices.Grow(cn.buf.Buf, b.sizeHint()+len(query)+1024)
	var next func(context.Context) error
	var perr error // a value of a later piece the encoder refused
	if len(groups) > 1 {
		p.pieces.Add(int64(len(groups)))
		k := 0
		next = func(context.Context) error {
			b.release()
			k++
			if k == len(groups) {
				return io.EOF
			}
			if err := b.prepare(t, groups[k]); err != nil {
				// The pieces sent stay in the server's squashing
				// buffer: the INSERT, left unfinished, inserts nothing.
				b.release()
				perr = err
				return err
			}
			held.set(b.scratch())
			return nil
		}
	}
	err = cn.insert(ctx, query, b.input, next)
	b.release()
	p.put(cn, err)
	if perr != nil {
		return perr
	}
	var drift *chgoTypeDrift
	if errors.As(err, &drift) && ctx.Err() == nil {
		// Nothing was sent but the query, and the connection is closed:
		// the server dropped the INSERT. The error is permanent for this
		// plan; the shard reads the table again and converts the batch to
		// the new types (Options.Reshape).
		return &InsertError{Table: t.Name(), Column: drift.column, Type: drift.planned, Err: drift}
	}
	if ex, ok := errors.AsType[*chgo.Exception](err); ok {
		// The server's exception is the error: ch-go's wrapping names
		// only the step of its own loop that read it.
		err = ex
	}
	if err != nil {
		return &InsertError{Table: t.Name(), Err: err}
	}
	return nil
}

// insert sends one INSERT of the block in. When ctx ends, the connection's
// I/O stops at once (ch-go itself would notice only at its next read
// timeout) and the connection is not reused.
func (cn *chgoConn) insert(ctx context.Context, query string, in proto.Input, next func(context.Context) error) error {
	stop := context.AfterFunc(ctx, cn.nc.abort)
	defer stop()
	q := chgo.Query{Body: query, Input: in, OnInput: next, QueryID: uuid.NewString()}
	if err := cn.armCompat(q.QueryID); err != nil {
		return err
	}
	err := cn.cl.Do(ctx, q)
	cn.nc.disarm()
	return err
}

// ping checks that the server answers on cn; when ctx ends, the
// connection's I/O stops at once.
func (cn *chgoConn) ping(ctx context.Context) error {
	stop := context.AfterFunc(ctx, cn.nc.abort)
	defer stop()
	return cn.cl.Ping(ctx)
}
