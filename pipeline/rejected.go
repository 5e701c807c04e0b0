package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/sink/clickhouse"
)

// onRejected is the shards' handler of a record whose rows ClickHouse
// refused (sink/clickhouse/bisect.go), or nil when such a refusal stops the
// pipeline: under on_error fail, and with exactly-once delivery, where the
// bisected parts of a block would be new insert blocks that a replay
// could not rebuild the same way, and ClickHouse's block deduplication
// would take parts with equal rows for duplicates.
//
// Under skip the record is counted (reason insert_rejected) and logged;
// under dlq its rows, as JSON, go to the dead-letter topic with the
// server's message and the record's source position, and the handler
// returns once the broker has the copy: the batch, and with it the
// record's offset, is acknowledged only after that.
func (p *Pipeline) onRejected() func(ctx context.Context, r clickhouse.Rejected) error {
	if (p.onError != config.OnErrorSkip && p.onError != config.OnErrorDLQ) || p.eo() {
		return nil
	}
	return func(ctx context.Context, r clickhouse.Rejected) error {
		// The chunks of the staged path carry no spans (their ack group
		// does): the chunk's owner names the partition.
		if r.Chunk.Owner != nil {
			r.Topic, r.Partition = r.Chunk.Owner.Source()
		}
		err := &decode.Error{Reason: decode.ReasonInsertRejected, Err: r.Err}
		reason := p.countRejected(err)
		if p.rejectLog.Allow() {
			p.log.Warn("ClickHouse refused a record's rows", "on_error", p.onError, "table", r.Table,
				"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "rows", r.To-r.From, "err", r.Err)
		}
		if p.onError == config.OnErrorSkip {
			return nil
		}
		rec := &kgo.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Value: rowsJSON(r.Chunk, r.From, r.To)}
		// A write that fails is retried with backoff, holding the batch
		// (and so its offsets) until the copy is acknowledged.
		for attempt := 1; ; attempt++ {
			done := make(chan error, 1)
			p.dlq.Write(rec, reason, err, func(werr error) { done <- werr })
			var werr error
			select {
			case werr = <-done:
			case <-ctx.Done():
				return ctx.Err()
			}
			p.dlqAnswered(werr)
			if werr == nil {
				return nil
			}
			wait := p.dlqBackoff(attempt)
			if p.dlqLog.Allow() {
				p.log.Warn("dead-letter write failed: retrying; not committing past the record",
					"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "attempt", attempt, "retry_in", wait.Round(time.Millisecond), "err", werr)
			}
			t := p.timing().NewTimer(wait)
			select {
			case <-t.C():
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-p.haltChan():
				t.Stop()
				return fmt.Errorf("%s/%d offset %d: rows refused by %s (%v); the dead-letter write failed: %w", r.Topic, r.Partition, r.Offset, r.Table, r.Err, werr)
			}
		}
	}
}

// rowsJSON renders rows [from, to) of c as the dead-letter value of a
// record whose rows the server refused: a JSON object of column name to
// value for one row, an array of them for several. Values are as they were
// sent: numbers, strings, arrays, NULL as null; times as
// "2006-01-02 15:04:05" UTC, maps as arrays of [key, value], floats that
// JSON cannot hold as strings.
func rowsJSON(c *chunk.Chunk, from, to int) []byte {
	part, err := c.Slice(from, to)
	if err != nil {
		b, _ := json.Marshal(map[string]string{"error": err.Error()})
		return b
	}
	rows := make([]map[string]any, part.Rows)
	for i := range rows {
		rows[i] = make(map[string]any, len(part.Cols))
	}
	for j, col := range part.Cols {
		name, t := part.Schema.Names[j], part.Schema.Types[j]
		texts, text := chunk.TextsOf(t)
		for i := 0; i < part.Rows && i < col.Len(); i++ {
			if text {
				// The string family as its text (IPv4 dotted, not its
				// number).
				rows[i][name] = texts.Text(col, i)
				continue
			}
			rows[i][name] = jsonCell(t, true, col.Row(i))
		}
	}
	var out any = rows
	if len(rows) == 1 {
		out = rows[0]
	}
	b, err := json.Marshal(out)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return b
}

// jsonCell converts v, a value of type t as chunk.Column.Row gives it,
// into something encoding/json writes, as the rows were rendered from the
// values sent to the driver: at the top level only (top), DateTime
// numbers as text and DateTime64(3) as its milliseconds (the string
// family's top-level values are their texts, chunk.Texts.Text); an array of
// UInt8 as a string of its bytes; a wide integer as {}.
func jsonCell(t *chunk.Type, top bool, v any) any {
	if v == nil {
		return nil
	}
	t = t.Base()
	switch t.Kind {
	case chunk.KindNullable:
		return jsonCell(t.Elem, false, v)
	case chunk.KindArray:
		elems := v.([]any)
		if t.Elem.Base().Kind == chunk.KindUInt8 {
			b := make([]byte, len(elems))
			for i, e := range elems {
				b[i] = e.(uint8)
			}
			return string(b)
		}
		out := make([]any, len(elems))
		for i, e := range elems {
			out[i] = jsonCell(t.Elem, false, e)
		}
		return out
	case chunk.KindTuple:
		elems := v.([]any)
		out := make([]any, len(elems))
		for i, e := range elems {
			out[i] = jsonCell(t.Elems[i], false, e)
		}
		return out
	case chunk.KindMap:
		var pairs [][2]any
		for _, kv := range v.([][2]any) {
			pairs = append(pairs, [2]any{jsonCell(t.Key, false, kv[0]), jsonCell(t.Elem, false, kv[1])})
		}
		return pairs
	case chunk.KindDateTime:
		if top {
			return time.Unix(v.(int64), 0).UTC().Format("2006-01-02 15:04:05")
		}
	case chunk.KindDateTime64:
		if top && t.Precision == 3 {
			return v.(time.Time).UnixMilli()
		}
	}
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05.999999999")
	case float32:
		return jsonFloat(float64(x))
	case float64:
		return jsonFloat(x)
	case [16]byte:
		return net.IP(x[:]).String()
	case *big.Int:
		return *x
	}
	return v
}

func jsonFloat(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(f)
	}
	return f
}
