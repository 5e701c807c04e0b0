package clickhouse

import (
	"log/slog"
	"sync"
	"time"

	"github.com/etl-project/etl/chunk"
)

// A column the data leaves at its default in every row of a batch.
//
// The decoders note, per chunk and column, the leading rows whose record
// lacked the column's field (chunk.Chunk.Absent, one compare where the
// default is appended, nothing for a record that has every field). After
// an insert, the shard adds the counts of the batch's chunks, a few
// integers per chunk and column: a column whose sum is the batch's row
// count was filled by no record of the batch. Such a batch adds its rows to
// etl_sink_defaulted_rows_total{table,column}, and the first of each hour
// logs a warning naming the table, the column and the field it is filled
// from (not for a column filled by name whose table DEFAULT expression etl
// computes: a column left to its DEFAULT on purpose is counted only): a column mapped to a field no record has (a typo the
// configuration could not be checked against, as with schemaless JSON)
// is seen at once instead of as a column of zeros.

// defaultedEvery is how often the warning about one column is repeated.
const defaultedEvery = time.Hour

// hourly lets one event per key through per defaultedEvery.
type hourly struct {
	mu   sync.Mutex
	last map[string]time.Time
	now  func() time.Time
}

func newHourly() *hourly { return &hourly{last: map[string]time.Time{}, now: time.Now} }

// allow reports whether key's event may be logged now, and notes it.
func (h *hourly) allow(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if t, ok := h.last[key]; ok && now.Sub(t) < defaultedEvery {
		return false
	}
	h.last[key] = now
	return true
}

// noteDefaulted counts and reports the columns no record of an inserted
// batch filled: rows rows in chunks, inserted by target t.
func (s *Shard) noteDefaulted(t *Target, chunks []*chunk.Chunk, rows int) {
	if rows <= 0 || len(chunks) == 0 {
		return
	}
	if t != nil && s.defaultedSeries.Swap(t) != t {
		// Every inserted column has its series from the target's first
		// insert on, at 0 until a batch leaves it at its default, so that
		// a rate or an alert over it sees the column.
		for _, col := range t.Schema.Names {
			s.m.sink.defaulted.WithLabelValues(t.Name(), col)
		}
	}
	sc := chunks[0].Schema
	for j := range sc.Names {
		absent := 0
		for _, c := range chunks {
			if j >= len(c.Absent) {
				absent = -1
				break
			}
			absent += int(c.Absent[j])
		}
		if absent < rows {
			continue
		}
		col := sc.Names[j]
		field, inserted, ownDefault := "", false, false
		for i, n := range t.Schema.Names {
			if n == col && i < len(t.Fields) {
				field, inserted, ownDefault = t.Fields[i], true, t.defaultOf(i) != ""
			}
		}
		if !inserted {
			continue // a column the table no longer has: not written
		}
		m := s.m.sink
		m.defaulted.WithLabelValues(t.Name(), col).Add(float64(rows))
		// A column of its own name with a DEFAULT expression the table
		// computes is left to it on purpose: counted, not logged.
		if (field != col || !ownDefault) && m.defaultedLog.allow(t.Name()+"\x00"+col) {
			s.log.Warn("no record of the batch had the column's field: every row holds the column's default (logged once an hour per column; etl_sink_defaulted_rows_total counts them)",
				slog.String("table", t.Name()), slog.String("column", col), slog.String("field", field), slog.Int("rows", rows))
		}
	}
}
