package json

import (
	"github.com/etl-project/etl/chunk"

	"github.com/etl-project/etl/decode"
)

// diagScalar decides, when diagnosing, the scalar at s[i] that column
// ci's fast setter refused with the column's setter: false when it refuses
// it too (or the value cannot be parsed alone).
func (d *Decoder) diagScalar(s []byte, i, ci int, c *chunk.Chunk) bool {
	if !d.diag {
		return false
	}
	v, _, ok := d.parseAlone(s, i, 2)
	if !ok {
		return false
	}
	if e := d.cols[ci].set(d, v, c.Cols[ci]); e != nil {
		d.diagnosed(e, ci)
		return false
	}
	return true
}

// diagnosed records e, the error of column ci, when diagnosing.
func (d *Decoder) diagnosed(e *decode.Error, ci int) {
	if !d.diag {
		return
	}
	p := &d.cols[ci]
	e.Field, e.Column, e.Type = p.field, p.name, p.typ
	d.diagErr = e
}

// diagnoseBytes is the size from which a record the one-pass path gave up
// is diagnosed by it (diagnose) before the fastjson path parses it whole.
var diagnoseBytes = keepParserBytes

// diagnose runs the one-pass path again on a record it gave up, letting
// each column's setter decide every value a fast setter refused: a large
// record with a bad value is then reported without a parse tree of the
// whole record. done is false when it cannot tell (a syntax the one-pass
// path leaves to fastjson, a field twice): the fastjson path decides. When
// done, the record's row is appended (e nil), or nothing and e is the
// error of the first bad value in the record's order (the fastjson path
// reports the first in the columns' order: the two differ only for a
// record with bad values in several columns). A record whose syntax is
// bad anywhere is left to fastjson.
func (d *Decoder) diagnose(s []byte, c *chunk.Chunk) (done bool, e *decode.Error) {
	d.diag, d.diagErr = true, nil
	defer func() { d.diag, d.diagErr = false, nil }()
	rows := c.Rows
	ok := d.fastRow(s, c)
	if d.parsedBig {
		d.parsedBig = false
		defer d.release(len(s))
	}
	if ok {
		return true, nil
	}
	c.Truncate(rows)
	if d.diagErr == nil || d.diagErr.Column == "" {
		return false, nil
	}
	// The rest of the record must be valid too, else fastjson reports its
	// syntax error (corrupt), and the bad value's field must not appear
	// again (fastjson takes the last).
	if !d.readFieldsOnce(s) {
		return false, nil
	}
	return true, d.diagErr
}

// readFieldsOnce reports whether s is a flat object in the syntax the
// one-pass path accepts in which no field a column reads appears twice.
func (d *Decoder) readFieldsOnce(s []byte) bool {
	d.gen++
	if d.gen == 0 {
		clear(d.seen)
		d.gen = 1
	}
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return false
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		return skipWS(s, i+1) == len(s)
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return false
		}
		ks := i + 1
		for i = ks; i < len(s) && s[i] != '"' && s[i] != '\\'; i++ {
		}
		if i >= len(s) || s[i] != '"' {
			return false
		}
		if fi, ok := d.index[string(s[ks:i])]; ok {
			for _, ci := range d.fields[fi] {
				if d.seen[ci] == d.gen {
					return false
				}
				d.seen[ci] = d.gen
			}
		}
		i = skipWS(s, i+1)
		if i >= len(s) || s[i] != ':' {
			return false
		}
		var ok bool
		if i, ok = skipValue(s, skipWS(s, i+1), 2); !ok {
			return false
		}
		i = skipWS(s, i)
		if i >= len(s) {
			return false
		}
		switch s[i] {
		case ',':
			i = skipWS(s, i+1)
			continue
		case '}':
			return skipWS(s, i+1) == len(s)
		}
		return false
	}
}
