package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/sink/clickhouse"
	"github.com/etl-project/etl/transform"
)

// reshape converts chunks built for a table whose column types have
// changed since (ALTER TABLE ... MODIFY COLUMN under a running pipeline)
// into one chunk of the live target: the shards' Reshape. Each column of
// live is filled from the chunks' column of the same name, converted as
// the transform chain converts a field into a column (range-checked);
// conversions the chain does not make by itself into a String column go
// through string(x), as ClickHouse's toString prints the value. A column
// the chunks lack gets its default. A value that cannot be converted
// fails the whole conversion, naming the row and the column: the batch
// then fails as its insert would have.
func (p *Pipeline) reshape(chunks []*chunk.Chunk, live *clickhouse.Target) ([]*chunk.Chunk, error) {
	if len(chunks) == 0 {
		return chunks, nil
	}
	from := chunks[0].Schema
	fields := make([]string, len(live.Schema.Names))
	for i, n := range live.Schema.Names {
		if slices.Contains(from.Names, n) {
			fields[i] = n
		}
	}
	outs := []transform.Output{{Name: "table", Schema: live.Schema, Fields: fields, ShardKey: -1, Weights: []int{1}, Ranges: p.serverRanges()}}
	chain, err := transform.Compile(nil, from, outs)
	if err != nil {
		var set []config.Assignment
		for i, n := range live.Schema.Names {
			j := slices.Index(from.Names, n)
			if j < 0 || from.Types[j].Name == live.Schema.Types[i].Name {
				continue
			}
			switch live.Schema.Types[i].Base().Kind {
			case chunk.KindString, chunk.KindFixedString:
				set = append(set, config.Assignment{Field: n, Expr: config.Expr{Text: "string(" + n + ")"}})
			}
		}
		if len(set) == 0 {
			return nil, err
		}
		var err2 error
		if chain, err2 = transform.Compile([]config.Step{{Set: set}}, from, outs); err2 != nil {
			return nil, errors.Join(err, err2)
		}
	}
	out, err := chunk.New(live.Schema)
	if err != nil {
		return nil, err
	}
	em := oneChunk{out}
	for _, c := range chunks {
		for row := 0; row < c.Rows; row++ {
			if _, err := chain.Run(c, row, em); err != nil {
				return nil, fmt.Errorf("row %s of the chunk with source %v: %w", strconv.Itoa(row), c.Spans, err)
			}
		}
	}
	out.Measure()
	return []*chunk.Chunk{out}, nil
}

// oneChunk is the emitter of reshape: every row goes to its one chunk.
type oneChunk struct{ c *chunk.Chunk }

func (e oneChunk) Chunk(int, int) *chunk.Chunk { return e.c }
