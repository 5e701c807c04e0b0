package chunk

import "fmt"

// Schema is the ordered list of target columns a chunk is built for.
type Schema struct {
	Names []string
	Types []*Type
}

// Span is a contiguous range of source offsets [First, Next) of one
// partition, under one assignment epoch. Every record in the range is
// accounted for by the chunk that carries the span: it produced rows in it,
// or it produced none (filtered out).
type Span struct {
	Topic     string
	Partition int32
	Epoch     uint64
	First     int64
	Next      int64
}

func (s Span) String() string {
	return fmt.Sprintf("%s/%d@%d[%d,%d)", s.Topic, s.Partition, s.Epoch, s.First, s.Next)
}

// Chunk is a columnar block of rows and the source spans they came from.
type Chunk struct {
	Schema *Schema
	Cols   []Column
	Rows   int
	Spans  []Span
	// Owner is what built the chunk and is told when it is durable (set
	// by the pipeline; chunks and sinks never call it).
	Owner Owner
	// Dest routes the chunk: the index of the shard queue it goes to,
	// set by whoever builds it.
	Dest int
	// Oldest is the earliest source record timestamp among the chunk's
	// records, in Unix milliseconds (0: none), for the end-to-end latency.
	Oldest int64
	// Marks map rows back to the records they came from: mark i says that
	// rows [Marks[i-1].End, Marks[i].End) came from the record at
	// Marks[i].Offset (of the partition of the chunk's spans). Only
	// records that made rows are marked. The sink uses them to find the
	// record behind a row the server refuses.
	Marks []Mark
	// Absent[i] is the number of leading rows whose record lacked the
	// field of column i, which therefore hold its default (nil while no
	// row's did): it equals Rows exactly when no row of the chunk has the
	// field. The sink compares the counts of a batch's chunks with its
	// rows to see a column the data never fills
	// (etl_sink_defaulted_rows_total). A prefix, not a count, so that
	// Truncate keeps it exact: the rows a refused record takes back may
	// have lacked the field, and a count would still hold them.
	Absent []int32
	size   int
}

// MarkAbsent notes that the record of the row being built (row Rows)
// lacks column col's field; called again for the same row, it changes
// nothing.
func (c *Chunk) MarkAbsent(col int) {
	if len(c.Absent) != len(c.Cols) {
		c.Absent = make([]int32, len(c.Cols))
	}
	if int(c.Absent[col]) == c.Rows {
		c.Absent[col]++
	}
}

// Owner is the builder of a chunk: a partition's lane, or the group of
// chunks one run of records made.
type Owner interface {
	// Acked is called once, when a sink's insert of the chunk was
	// acknowledged by ClickHouse.
	Acked()
	// Source names the Kafka partition the chunk's rows came from.
	Source() (topic string, partition int32)
}

// Mark is the end of one record's rows in a chunk.
type Mark struct {
	End    int   // the chunk's row count after the record's rows
	Offset int64 // the record's source offset
}

// MarkRecord notes that the rows appended since the last mark came from
// the record at offset. It does nothing when the record made no row.
func (c *Chunk) MarkRecord(offset int64) {
	last := 0
	if n := len(c.Marks); n > 0 {
		last = c.Marks[n-1].End
	}
	if c.Rows > last {
		c.Marks = append(c.Marks, Mark{End: c.Rows, Offset: offset})
	}
}

// RecordRows returns the rows [from, to) of the i-th marked record and
// its offset.
func (c *Chunk) RecordRows(i int) (from, to int, offset int64) {
	if i > 0 {
		from = c.Marks[i-1].End
	}
	return from, c.Marks[i].End, c.Marks[i].Offset
}

// Slice returns a new chunk of the same schema holding copies of rows
// [from, to), measured, with no spans, marks or tag.
func (c *Chunk) Slice(from, to int) (*Chunk, error) {
	out, err := New(c.Schema)
	if err != nil {
		return nil, err
	}
	for i, col := range out.Cols {
		col.(rowCopier).appendRows(c.Cols[i], from, to)
	}
	out.Rows = to - from
	out.Dest = c.Dest
	out.Measure()
	return out, nil
}

// NoteTime lowers Oldest to ms, a record's timestamp in Unix milliseconds.
func (c *Chunk) NoteTime(ms int64) {
	if ms > 0 && (c.Oldest == 0 || ms < c.Oldest) {
		c.Oldest = ms
	}
}

// New returns an empty chunk for schema s.
func New(s *Schema) (*Chunk, error) {
	c := &Chunk{Schema: s, Cols: make([]Column, len(s.Types))}
	for i, t := range s.Types {
		col, err := NewColumn(t)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", s.Names[i], err)
		}
		c.Cols[i] = col
	}
	return c, nil
}

// AddRange records that the offsets [first, next) of (topic, partition,
// epoch) are covered by this chunk, extending the last span when contiguous.
// A range may include offsets that hold no record (compaction, transaction
// markers): they are covered all the same.
func (c *Chunk) AddRange(topic string, partition int32, epoch uint64, first, next int64) {
	if n := len(c.Spans); n > 0 {
		s := &c.Spans[n-1]
		if s.Partition == partition && s.Epoch == epoch && s.Next == first && s.Topic == topic {
			s.Next = next
			return
		}
	}
	c.Spans = append(c.Spans, Span{Topic: topic, Partition: partition, Epoch: epoch, First: first, Next: next})
}

// Reset empties the chunk for reuse, keeping its columns' capacity. The
// caller must be sure nothing reads the chunk's values any more (the sink
// acknowledged it: the driver copied the values before the insert
// returned).
func (c *Chunk) Reset() {
	c.Truncate(0)
	c.Spans = c.Spans[:0]
	c.Marks = c.Marks[:0]
	clear(c.Absent)
	c.Owner = nil
	c.Oldest = 0
	c.size = 0
}

// Truncate drops rows from n on in every column (to undo a partly
// appended row).
//
// A column whose Len is exactly n is truncated too: a partly appended row
// of an Array or Nullable column has its elements or value in Inner before
// EndRow or MarkValue counts it in Len.
func (c *Chunk) Truncate(n int) {
	for _, col := range c.Cols {
		if col.Len() >= n {
			col.Truncate(n)
		}
	}
	c.Rows = n
	for i, a := range c.Absent {
		c.Absent[i] = min(a, int32(n))
	}
	for len(c.Marks) > 0 && c.Marks[len(c.Marks)-1].End > n {
		c.Marks = c.Marks[:len(c.Marks)-1]
	}
}

// Measure recomputes and returns the bytes the chunk counts for: the sum
// of its columns' ColumnSize, the larger of what each holds in memory and
// what it takes in a Native block (padding, dictionaries, null maps,
// offsets and length prefixes included). The budget, the sink's batches
// and chunk.target_bytes all count this figure.
func (c *Chunk) Measure() int {
	n := 0
	if c.Schema != nil && len(c.Schema.Types) == len(c.Cols) {
		for i, col := range c.Cols {
			n += ColumnSize(c.Schema.Types[i], col)
		}
	} else {
		for _, col := range c.Cols {
			n += col.Size()
		}
	}
	c.size = n
	return n
}

// Size is the size last computed by Measure.
func (c *Chunk) Size() int { return c.size }

// Records is the number of source records the chunk's spans cover.
func (c *Chunk) Records() int64 {
	var n int64
	for _, s := range c.Spans {
		n += s.Next - s.First
	}
	return n
}
