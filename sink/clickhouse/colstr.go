package clickhouse

import (
	"sync"

	"github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"

	"github.com/etl-project/etl/chunk"
)

// The driver builds a fresh column for every INSERT and appends to it one
// string at a time, so a String column's buffers (the bytes, and 16 bytes
// of position per row) would grow from zero by doubling on every batch:
// most of the client's allocation and copying. The driver's column string
// provider lets us hand out buffers already sized for the batch: Insert
// records, per column name, the bytes and rows its String columns are about
// to receive, and the provider allocates that much when the driver creates
// a String column of that name.
//
// The provider is process-wide and knows only the column's name, so the
// hints are sizes, never buffers: a column of the same name built for
// another query (or for another insert running at the same time) gets an
// allocation of about the right size and grows as usual if it needs more.
// Nothing is shared between columns.
//
// clickhouse-go has only the one, global, provider, so installing it is a
// process-wide act. It is done explicitly, once (installColStr), when the
// first Client is connected (before it uses the driver, so that every
// goroutine using a Client sees it installed; clickhouse-go keeps the
// provider in a plain variable) and by hintStrings, the code that records
// the hints, in case none was; not when the package is imported: a
// process that imports the package without connecting keeps
// clickhouse-go's default. Installed, it is safe for every other user of
// clickhouse-go in the process: a column name with no hint recorded gets
// the default (an empty proto.ColStr, as clickhouse-go's own provider
// gives), and a name that happens to match one of ours gets only a
// capacity hint.

// colStrOnce installs provideColStr once per process.
var colStrOnce sync.Once

// installColStr makes provideColStr clickhouse-go's column string
// provider, once; later calls do nothing.
func installColStr() {
	colStrOnce.Do(func() { column.WithColStrProvider(provideColStr) })
}

// strHint is the expected content of a String column of one INSERT.
type strHint struct{ bytes, rows int }

// strHints maps column names to their strHint.
var strHints sync.Map

func provideColStr(name string) proto.ColStr {
	v, ok := strHints.Load(name)
	if !ok {
		return proto.ColStr{}
	}
	h := v.(strHint)
	return proto.ColStr{Buf: make([]byte, 0, h.bytes), Pos: make([]proto.Position, 0, h.rows)}
}

// hintStrings records the sizes of the String and Nullable(String) columns
// of chunks (built for t.Schema) for the driver's columns of the next
// INSERT, installing the provider that reads them if it is not yet.
func hintStrings(t *Target, chunks []*chunk.Chunk) {
	installColStr()
	for i, typ := range t.Schema.Types {
		if typ.Kind == chunk.KindNullable {
			typ = typ.Elem
		}
		if typ.Kind != chunk.KindString {
			continue
		}
		var h strHint
		for _, ch := range chunks {
			s := stringsOf(ch.Cols[t.col(i)])
			if s == nil {
				h = strHint{}
				break
			}
			h.bytes += len(s.Buf)
			h.rows += len(s.Ends)
		}
		name := t.Schema.Names[i]
		if h.rows == 0 {
			strHints.Delete(name)
			continue
		}
		strHints.Store(name, h)
	}
}

// stringsOf returns the string arena of a String or Nullable(String)
// column, or nil.
func stringsOf(c chunk.Column) *chunk.Strings {
	if n, ok := c.(*chunk.Nullable); ok {
		c = n.Inner
	}
	s, _ := c.(*chunk.Strings)
	return s
}
