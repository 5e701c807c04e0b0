package transform

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
)

// mkSchema builds a schema from "name Type" pairs.
func mkSchema(t testing.TB, cols ...string) *chunk.Schema {
	t.Helper()
	s := &chunk.Schema{}
	for _, c := range cols {
		sp := strings.IndexByte(c, ' ')
		typ, err := chunk.ParseType(c[sp+1:])
		if err != nil {
			t.Fatalf("type of %q: %v", c, err)
		}
		s.Names = append(s.Names, c[:sp])
		s.Types = append(s.Types, typ)
	}
	return s
}

func mkChunk(t testing.TB, s *chunk.Schema) *chunk.Chunk {
	t.Helper()
	c, err := chunk.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// addRow appends one row to c; vals maps column names to values (missing
// columns get their default).
func addRow(t testing.TB, c *chunk.Chunk, vals map[string]any) {
	t.Helper()
	for i, name := range c.Schema.Names {
		v, ok := vals[name]
		if !ok {
			c.Cols[i].AppendDefault()
			continue
		}
		if err := appendVal(c.Cols[i], c.Schema.Types[i], v); err != nil {
			t.Fatalf("column %s: %v", name, err)
		}
	}
	c.Rows++
}

func appendVal(col chunk.Column, typ *chunk.Type, v any) error {
	typ = typ.Base()
	if v == nil {
		col.AppendDefault()
		return nil
	}
	switch c := col.(type) {
	case *chunk.Nullable:
		if err := appendVal(c.Inner, typ.Elem, v); err != nil {
			return err
		}
		c.MarkValue()
	case *chunk.Array:
		for _, e := range v.([]any) {
			if err := appendVal(c.Inner, typ.Elem, e); err != nil {
				return err
			}
		}
		c.EndRow()
	case *chunk.Fixed[int8]:
		c.Append(int8(v.(int)))
	case *chunk.Fixed[int16]:
		c.Append(int16(v.(int)))
	case *chunk.Fixed[int32]:
		c.Append(int32(v.(int)))
	case *chunk.Fixed[int64]:
		switch x := v.(type) {
		case int:
			c.Append(int64(x))
		case int64:
			c.Append(x)
		case time.Time:
			c.Append(x.Unix())
		default:
			return fmt.Errorf("%T for %s", v, typ.Name)
		}
	case *chunk.Fixed[uint8]:
		c.Append(uint8(v.(int)))
	case *chunk.Fixed[uint16]:
		c.Append(uint16(v.(int)))
	case *chunk.Fixed[uint32]:
		c.Append(uint32(v.(int)))
	case *chunk.Fixed[uint64]:
		switch x := v.(type) {
		case int:
			c.Append(uint64(x))
		case uint64:
			c.Append(x)
		}
	case *chunk.Fixed[float32]:
		c.Append(float32(v.(float64)))
	case *chunk.Fixed[float64]:
		c.Append(v.(float64))
	case *chunk.Fixed[bool]:
		c.Append(v.(bool))
	case *chunk.Fixed[time.Time]:
		c.Append(v.(time.Time))
	case *chunk.DateTime64:
		c.Append(v.(int64))
	case *chunk.Strings:
		c.AppendString(v.(string))
	default:
		return fmt.Errorf("unsupported column %T", col)
	}
	return nil
}

// cell returns row i of col as a comparable Go value (nil for NULL).
func cell(col chunk.Column, i int) any {
	switch c := col.(type) {
	case *chunk.Nullable:
		if c.Nulls[i] != 0 {
			return nil
		}
		return cell(c.Inner, i)
	case *chunk.Array:
		start := 0
		if i > 0 {
			start = c.Ends[i-1]
		}
		out := []any{}
		for j := start; j < c.Ends[i]; j++ {
			out = append(out, cell(c.Inner, j))
		}
		return out
	case *chunk.Strings:
		return c.Value(i)
	case *chunk.DateTime64:
		return c.Data[i]
	case *chunk.Fixed[int8]:
		return c.Data[i]
	case *chunk.Fixed[int16]:
		return c.Data[i]
	case *chunk.Fixed[int32]:
		return c.Data[i]
	case *chunk.Fixed[int64]:
		return c.Data[i]
	case *chunk.Fixed[uint8]:
		return c.Data[i]
	case *chunk.Fixed[uint16]:
		return c.Data[i]
	case *chunk.Fixed[uint32]:
		return c.Data[i]
	case *chunk.Fixed[uint64]:
		return c.Data[i]
	case *chunk.Fixed[float32]:
		return c.Data[i]
	case *chunk.Fixed[float64]:
		return c.Data[i]
	case *chunk.Fixed[bool]:
		return c.Data[i]
	case *chunk.Fixed[time.Time]:
		return c.Data[i]
	}
	return fmt.Sprintf("?%T", col)
}

// rows returns a chunk's rows as strings "a|b|c" for comparisons.
func rows(c *chunk.Chunk) []string {
	var out []string
	for i := 0; i < c.Rows; i++ {
		var parts []string
		for _, col := range c.Cols {
			parts = append(parts, fmt.Sprint(cell(col, i)))
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out
}

// emitter hands out one chunk per (sink, shard), made on demand.
type emitter struct {
	t      testing.TB
	outs   []Output
	chunks map[[2]int]*chunk.Chunk
	calls  int
}

func newEmitter(t testing.TB, outs []Output) *emitter {
	return &emitter{t: t, outs: outs, chunks: map[[2]int]*chunk.Chunk{}}
}

func (e *emitter) Chunk(sink, shard int) *chunk.Chunk {
	e.calls++
	k := [2]int{sink, shard}
	if c, ok := e.chunks[k]; ok {
		return c
	}
	c := mkChunk(e.t, e.outs[sink].Schema)
	e.chunks[k] = c
	return c
}

func (e *emitter) rows(sink, shard int) []string {
	c, ok := e.chunks[[2]int{sink, shard}]
	if !ok {
		return nil
	}
	return rows(c)
}

// output builds an Output whose fields are the column names, from "name
// Type" pairs; a pair "col Type <- field" reads another field.
func output(t testing.TB, name string, cols ...string) Output {
	t.Helper()
	o := Output{Name: name, ShardKey: -1}
	var specs []string
	for _, c := range cols {
		field := ""
		if i := strings.Index(c, " <- "); i >= 0 {
			c, field = c[:i], c[i+4:]
		}
		specs = append(specs, c)
		if field == "" {
			field = c[:strings.IndexByte(c, ' ')]
		}
		o.Fields = append(o.Fields, field)
	}
	o.Schema = mkSchema(t, specs...)
	return o
}

var testFile = "p.yaml"

// at returns a position on line n of the test file.
func at(line, col int) config.Pos { return config.Pos{File: testFile, Line: line, Column: col} }

func ex(text string, line int) *config.Expr {
	return &config.Expr{Text: text, Pos: at(line, 13)}
}

func filter(text string, line int) config.Step {
	return config.Step{Filter: ex(text, line), Pos: at(line, 5)}
}

func set(line int, pairs ...string) config.Step {
	st := config.Step{Pos: at(line, 5)}
	for i := 0; i+1 < len(pairs); i += 2 {
		st.Set = append(st.Set, config.Assignment{Field: pairs[i], Expr: config.Expr{Text: pairs[i+1], Pos: at(line+1+i/2, 14)}})
	}
	return st
}

func flatten(field string, line int) config.Step {
	return config.Step{Flatten: field, Pos: at(line, 5)}
}
