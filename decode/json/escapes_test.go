package json

import (
	"errors"
	"strings"
	"testing"

	"github.com/etl-project/etl/decode"
)

// TestStringEscapes: an escape the server's JSON input refuses or alters
// refuses the record (corrupt, naming the escape), in a mapped field, an
// unmapped one, an array element and a key, by the one-pass path and the
// fastjson path alike; valid escapes, surrogate pairs included, are
// decoded exactly. No character next to an escape is ever dropped.
func TestStringEscapes(t *testing.T) {
	good := []struct{ in, want string }{
		{`"\u0041"`, "A"},
		{`"\u00e9"`, "é"},
		{`"\ud83d\ude00"`, "😀"},
		{`"x\uD83D\uDE00y"`, "x😀y"},
		{`"\ud83d\ude00\u0041"`, "😀A"},
		{`"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
		{`"\\ud800"`, `\ud800`},
		{`"\\\ud83d\ude00"`, `\😀`},
		{`"\u0000"`, "\x00"},
		{`"\uffff"`, "\uffff"},
	}
	bad := []struct{ in, esc string }{
		{`"\ud800"`, `\ud800`},
		{`"\ud800\u0041"`, `\ud800`},
		{`"x\ud83d\u0041y"`, `\ud83d`},
		{`"\ud800\ud800"`, `\ud800`},
		{`"\ud83dx"`, `\ud83d`},
		{`"\udc00x"`, `\udc00`},
		{`"a\ude00"`, `\ude00`},
		{`"\x"`, `\x`},
		{`"a\a"`, `\a`},
		{`"\u12"`, `\u12`},
		{`"\u12g4"`, `\u12`},
		{`"ok\\\x"`, `\x`},
		{`"\ud83d\\ude00"`, `\ud83d`},
	}
	s := schemaOf(t, "s String", "n Int32")
	for _, noFast := range []bool{false, true} {
		path := map[bool]string{false: "one-pass", true: "fastjson"}[noFast]
		d, err := New(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		d.noFast = noFast
		for _, g := range good {
			c := newChunk(t, s)
			rec := `{"s":` + g.in + `,"n":1}`
			if _, err := d.Decode([]byte(rec), c); err != nil {
				t.Errorf("%s: %s: %v", path, rec, err)
				continue
			}
			if got := render(c.Cols[0], 0); got != g.want {
				t.Errorf("%s: %s: stored %q, want %q", path, rec, got, g.want)
			}
		}
		for _, b := range bad {
			for _, rec := range []string{
				`{"s":` + b.in + `,"n":1}`,         // a mapped field
				`{"n":1,"other":` + b.in + `}`,     // a field no column reads
				`{"n":1,"other":[1,` + b.in + `]}`, // inside an array
				`{"n":1,"o":{"k":` + b.in + `}}`,   // inside an object
				`{"n":1,` + b.in + `:2}`,           // a key
				`{"s":"a","n":1,"z":` + b.in + `}`, // after the mapped fields
			} {
				c := newChunk(t, s)
				n, err := d.Decode([]byte(rec), c)
				var de *decode.Error
				if !errors.As(err, &de) || de.Reason != decode.ReasonCorrupt || n != 0 || c.Rows != 0 {
					t.Errorf("%s: %s: %d rows, %v; want corrupt", path, rec, n, err)
					continue
				}
				if !strings.Contains(err.Error(), "invalid string escape") || !strings.Contains(err.Error(), strings.ReplaceAll(`"`+b.esc+`"`, `\`, `\\`)) {
					t.Errorf("%s: %s: %v; want it to name %s", path, rec, err, b.esc)
				}
			}
		}
	}
}
