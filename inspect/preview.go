package inspect

import (
	"context"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/pipeline"
)

// Preview decodes records and runs them through the transform chain
// exactly as the pipeline does, into the sinks' tables as ClickHouse
// describes them, and hands back the rows instead of inserting them: what
// `etl tail` prints. It joins no consumer group, commits nothing, writes
// no dead letters and inserts nothing. A Preview is not safe for
// concurrent use.
type Preview struct {
	parts   *pipeline.Parts
	onError config.OnError
}

// PreviewRow is one row as it would be inserted, or a record as decoded
// (Result.Raw): its column (or field) names and values, in table order.
// Values are Go values ready for JSON: numbers, strings, bools, nil for
// NULL, slices for arrays and tuples, and [key, value] pairs for maps;
// dates and times are text as ClickHouse prints them (UTC).
type PreviewRow struct {
	Sink   string
	Table  string
	Names  []string
	Values []any
}

// Result is what one record gives.
type Result struct {
	// Rows are the rows it would insert (none when the chain drops it or
	// it is rejected).
	Rows []PreviewRow
	// Raw is the record as decoded, before the chain (the fields the
	// chain reads); for a pipeline without a chain, its rows.
	Raw []PreviewRow
	// Rejected is what the pipeline does with a record it cannot decode
	// or transform: "dlq" (dead-lettered), "skip" or "fail" (the
	// pipeline stops at it), per decode.on_error; empty when it is not
	// rejected. Reason is the reason label, Err the error.
	Rejected string
	Reason   string
	Err      error
}

// PreviewOptions configures NewPreview.
type PreviewOptions struct {
	Config *config.Config
	Log    *slog.Logger
	// Offline plans each sink against the table derived from the data and
	// the chain (see pipeline.Derivable) instead of reading it from
	// ClickHouse.
	Offline bool
}

// NewPreview builds the pipeline's decoders and chain for o.Config
// against its sinks' tables, which it reads from ClickHouse (or derives,
// with Offline).
func NewPreview(ctx context.Context, o PreviewOptions) (*Preview, error) {
	parts, err := pipeline.OpenParts(ctx, pipeline.PartsOptions{Config: o.Config, Log: o.Log, Offline: o.Offline})
	if err != nil {
		return nil, err
	}
	if err := parts.Bind(); err != nil {
		parts.Close()
		return nil, err
	}
	return &Preview{parts: parts, onError: o.Config.Decode.OnError}, nil
}

// Close closes the connections the preview opened.
func (v *Preview) Close() { v.parts.Close() }

// Process decodes and transforms r. A record whose Avro schema is being
// fetched waits for it (until ctx ends).
func (v *Preview) Process(ctx context.Context, r *kgo.Record) (*Result, error) {
	d, err := v.parts.Decode(ctx, r)
	if err != nil {
		return nil, err
	}
	res := &Result{Reason: d.Reason, Err: d.Err}
	if d.Err != nil {
		switch v.onError {
		case config.OnErrorDLQ:
			res.Rejected = "dlq"
		case config.OnErrorSkip:
			res.Rejected = "skip"
		default:
			res.Rejected = "fail"
		}
	}
	// Times in their column's zone, the server's for a column without
	// one.
	tz := v.parts.ServerRanges().TZ
	for _, rows := range d.Rows {
		for i := 0; i < rows.Chunk.Rows; i++ {
			res.Rows = append(res.Rows, rowOf(rows.Sink, rows.Table, rows.Chunk, i, tz))
		}
	}
	for _, rows := range d.Raw {
		for i := 0; i < rows.Chunk.Rows; i++ {
			res.Raw = append(res.Raw, rowOf(rows.Sink, rows.Table, rows.Chunk, i, tz))
		}
	}
	return res, nil
}

// rowOf returns row i of c; tz is the server's time zone.
func rowOf(sink, table string, c *chunk.Chunk, i int, tz string) PreviewRow {
	r := PreviewRow{Sink: sink, Table: table, Names: c.Schema.Names, Values: make([]any, len(c.Cols))}
	for k, col := range c.Cols {
		r.Values[k] = display(c.Schema.Types[k], col.Row(i), tz)
	}
	return r
}

// display returns v, a value of type t from chunk.Column.Row, as the row
// shows it: a DateTime or DateTime64 as the server's toString shows it, in
// the column's zone (the server's, tz, for a column without one).
func display(t *chunk.Type, v any, tz string) any {
	if v == nil {
		return nil
	}
	switch t.Kind {
	case chunk.KindNullable, chunk.KindLowCardinality:
		return display(t.Elem, v, tz)
	case chunk.KindArray:
		vs, _ := v.([]any)
		out := make([]any, len(vs))
		for i, e := range vs {
			out[i] = display(t.Elem, e, tz)
		}
		return out
	case chunk.KindTuple:
		vs, _ := v.([]any)
		out := make([]any, len(vs))
		for i, e := range vs {
			if i < len(t.Elems) {
				out[i] = display(t.Elems[i], e, tz)
			}
		}
		return out
	case chunk.KindMap:
		kvs, _ := v.([][2]any)
		out := make([]any, len(kvs))
		for i, kv := range kvs {
			out[i] = []any{display(t.Key, kv[0], tz), display(t.Elem, kv[1], tz)}
		}
		return out
	case chunk.KindDateTime:
		if s, ok := v.(int64); ok {
			return time.Unix(s, 0).In(chunk.ZoneOf(t, chunk.ServerRanges{TZ: tz}).Location()).Format(time.DateTime)
		}
	case chunk.KindDate, chunk.KindDate32:
		if d, ok := v.(time.Time); ok {
			return d.UTC().Format(time.DateOnly)
		}
	case chunk.KindDateTime64:
		if d, ok := v.(time.Time); ok {
			// As toString prints it: exactly P fraction digits.
			layout := time.DateTime
			if t.Precision > 0 {
				layout += "." + strings.Repeat("0", t.Precision)
			}
			return d.In(chunk.ZoneOf(t, chunk.ServerRanges{TZ: tz}).Location()).Format(layout)
		}
	case chunk.KindDecimal:
		if s, ok := v.(string); ok {
			return decimalText(s, t.Scale)
		}
	case chunk.KindIPv4:
		if n, ok := v.(uint32); ok {
			return net.IPv4(byte(n>>24), byte(n>>16), byte(n>>8), byte(n)).String()
		}
	case chunk.KindIPv6:
		if b, ok := v.([16]byte); ok {
			return net.IP(b[:]).String()
		}
	case chunk.KindInt128, chunk.KindInt256, chunk.KindUInt128, chunk.KindUInt256:
		if b, ok := v.(*big.Int); ok {
			return b.String()
		}
	case chunk.KindUInt64:
		// Past 2^53 a JSON number loses digits in most readers.
		if n, ok := v.(uint64); ok && n > 1<<53 {
			return strconv.FormatUint(n, 10)
		}
	case chunk.KindInt64:
		if n, ok := v.(int64); ok && (n > 1<<53 || n < -(1<<53)) {
			return strconv.FormatInt(n, 10)
		}
	case chunk.KindFixedString:
		if b, ok := v.([]byte); ok {
			return string(b)
		}
	}
	if f, ok := v.(float64); ok && (f != f || f > 1.7e308 || f < -1.7e308) {
		return fmt.Sprint(f) // NaN and infinities are not JSON numbers
	}
	if f, ok := v.(float32); ok && (f != f || f > 3.4e38 || f < -3.4e38) {
		return fmt.Sprint(f)
	}
	return v
}

// decimalText is the plain decimal text s (as a Decimal column holds it:
// no digit but zeros past the scale) as the server's toString prints a
// Decimal of scale: no leading zeros, exactly scale fraction digits, zero
// without a sign. A column of unknown scale (Decimal(0, S) aside, S < 0
// never happens) gets s as it is.
func decimalText(s string, scale int) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	ip, fp, _ := strings.Cut(s, ".")
	ip = strings.TrimLeft(ip, "0")
	if ip == "" {
		ip = "0"
	}
	if len(fp) > scale {
		if strings.Trim(fp[scale:], "0") != "" {
			return s // not a stored value's text; shown as it is
		}
		fp = fp[:scale]
	}
	fp += strings.Repeat("0", scale-len(fp))
	if neg && strings.Trim(ip+fp, "0") == "" {
		neg = false
	}
	out := ip
	if scale > 0 {
		out += "." + fp
	}
	if neg {
		out = "-" + out
	}
	return out
}
