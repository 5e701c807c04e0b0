package json

import (
	"encoding/binary"
	"slices"

	"github.com/valyala/fastjson"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// The fast path decodes an object in one pass over its bytes (objects on
// the columns' field paths key by key, fast_nested.go), with no parse
// tree of the whole record: scalars go straight from the text into
// the columns; an array into an Array column is streamed element by
// element (a scalar element straight into the column, any other parsed
// alone by fastjson and given to the element type's setter); an object or
// array into a String column is stored as its compacted text; an object
// into a Map column is streamed key by key (values as array elements are);
// any other value a column reads (an object or array into a column of
// another type, a scalar for a type without a fast setter) is parsed alone
// by fastjson and given to the column's setter; the value of a field no column reads is
// skipped whatever its shape. So decoding a record builds at most the parse
// tree of one field's value, or of one array element, never of the whole
// record (docs/DESIGN.md, "Memory per record").
//
// It handles exactly the records it can decode the way the fastjson path
// does and gives up on everything else: a key with an escape, a field that
// appears twice, nesting deeper than maxSkipDepth, any syntax the fastjson
// path would reject or treat leniently, and any value a setter would
// reject. Then the chunk is truncated back and the fastjson path decodes
// the record, so every error is reported by the one path that defines the
// conversions. FuzzFastPath checks that both paths agree.
//
// Scalars have fast setters for integers, floats, String, DateTime, and
// Nullable and LowCardinality of those.

// fieldPlan is what the one-pass path reads of a field for each key.
type fieldPlan struct {
	// quoted is the field's name as its key ends in the text: the name and
	// the closing quote, or "" when the name has a quote or a backslash
	// (its key is then only found by scanning it).
	quoted string
	// key is quoted and a colon, the key as most records write it, as
	// little-endian words and the masks of their bytes (keyLen 0 when
	// longer than 16 bytes), so that key and colon are matched with one
	// or two loads and compares.
	word, mask [2]uint64
	keyLen     int
	cols       []int // the columns reading the field (Decoder.fields)
	fast       bool  // every column reading it has a fast setter for scalars
	// one is the only column reading the field when there is one and it
	// has a fast setter (the common case, taken without the loop over
	// cols), or -1; set is its fast setter.
	one int
	set fastSetter
	// fi is the field's position in Decoder.fields (-1 for an object on
	// the paths); sub is the plan of an object on the field paths, node
	// its position in Decoder.nodeSeen.
	fi   int
	node int
	sub  *objPlan
}

// setQuoted sets the plan's quoted key and its key words.
func (fp *fieldPlan) setQuoted(q string) {
	fp.quoted, fp.word, fp.mask, fp.keyLen = q, [2]uint64{}, [2]uint64{}, 0
	key := q + ":"
	if q == "" || len(key) > 16 {
		return
	}
	fp.keyLen = len(key)
	for k := range len(key) {
		fp.word[k/8] |= uint64(key[k]) << (8 * (k % 8))
		fp.mask[k/8] |= 0xff << (8 * (k % 8))
	}
}

// atKey reports whether s[i:] begins with the plan's key and colon.
func (fp *fieldPlan) atKey(s []byte, i int) bool {
	if fp.keyLen == 0 || i+8 > len(s) || binary.LittleEndian.Uint64(s[i:])&fp.mask[0] != fp.word[0] {
		return false
	}
	return fp.keyLen <= 8 || i+16 <= len(s) && binary.LittleEndian.Uint64(s[i+8:])&fp.mask[1] == fp.word[1]
}

// fastField appends the value at s[i] of field fi to every column reading
// it and returns the index past it. fi past d.fields is an object on the
// field paths, a key of the record.
func (d *Decoder) fastField(s []byte, i, fi int, c *chunk.Chunk) (int, bool) {
	if fi >= len(d.fields) {
		// The record's key of an object on the field paths, which comes
		// after its fields in d.top (fast_nested.go).
		return d.fastNode(s, i, &d.top.fields[fi], c)
	}
	cols := d.fields[fi]
	for _, ci := range cols {
		if d.seen[ci] == d.gen {
			return i, false // a field twice: the fastjson path keeps the last
		}
		d.seen[ci] = d.gen
		d.filled++
	}
	if i >= len(s) {
		return i, false
	}
	switch {
	case s[i] == '[' && d.fieldArr[fi]:
		// An array, streamed into each Array column reading it.
		next := i
		for _, ci := range cols {
			var ok bool
			if next, ok = d.fastArray(s, i, &d.fast[ci], c.Cols[ci].(*chunk.Array)); !ok {
				if d.diagErr != nil {
					d.diagnosed(d.diagErr, ci)
				}
				return i, false
			}
		}
		return next, true
	case s[i] == '{' && d.fieldMap[fi]:
		// An object, streamed into each Map column reading it.
		next := i
		for _, ci := range cols {
			var ok bool
			if next, ok = d.fastMap(s, i, &d.fast[ci], c.Cols[ci].(*chunk.Map)); !ok {
				if d.diagErr != nil {
					d.diagnosed(d.diagErr, ci)
				}
				return i, false
			}
		}
		return next, true
	case s[i] != '[' && s[i] != '{':
		t, text, next, ok := d.scalar(s, i)
		if ok && (t == tokNull || d.fieldPlan[fi].fast) {
			for _, ci := range cols {
				if t == tokNull {
					decode.AppendDefault(d.cols[ci].null, c.Cols[ci])
				} else if !d.fast[ci].set(d, t, text, c.Cols[ci]) {
					return i, false
				}
			}
			return next, true
		}
	}
	if (s[i] == '[' || s[i] == '{') && d.fieldText[fi] {
		// An object or array into String columns: its text, compacted.
		end, ok := skipValue(s, i, 2)
		if !ok {
			return i, false
		}
		d.scratch = appendCompact(slices.Grow(d.scratch[:0], end-i), s[i:end])
		if end-i > keepParserBytes {
			d.parsedBig = true // (release drops the large scratch)
		}
		for _, ci := range cols {
			if !d.fastSet[ci](d, tokNumber, d.scratch, c.Cols[ci]) {
				return i, false
			}
		}
		return end, true
	}
	// Any other value is parsed alone, and each column's setter takes it.
	v, end, ok := d.parseAlone(s, i, 2)
	if !ok {
		return i, false
	}
	for _, ci := range cols {
		if v.Type() == fastjson.TypeNull {
			decode.AppendDefault(d.cols[ci].null, c.Cols[ci])
		} else if e := d.cols[ci].set(d, v, c.Cols[ci]); e != nil {
			d.diagnosed(e, ci)
			return i, false
		}
	}
	return end, true
}

// decodeFast decodes value into one row of c, or leaves c as it was and
// reports false.
func (d *Decoder) decodeFast(s []byte, c *chunk.Chunk) bool {
	rows := c.Rows
	ok := d.fastRow(s, c)
	if !ok {
		c.Truncate(rows)
	}
	if d.parsedBig {
		d.parsedBig = false
		d.release(len(s))
	}
	return ok
}

func (d *Decoder) fastRow(s []byte, c *chunk.Chunk) bool {
	d.gen++
	d.filled = 0
	if d.gen == 0 {
		clear(d.seen)
		clear(d.nodeSeen)
		d.gen = 1
	}
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return false
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		i++
	} else {
		d.next = 0
		for {
			// Key.
			if i >= len(s) || s[i] != '"' {
				return false
			}
			i++
			// The field expected next, whose key ends with its name and a
			// quote (a name with neither quotes nor backslashes, so the
			// key has no escape), is found without scanning the key.
			// Most often its key is followed by the colon at once, and
			// both are matched by a word compare or two.
			fi, colon := d.next, false
			if fi < len(d.top.fields) {
				fp := &d.top.fields[fi]
				if fp.atKey(s, i) {
					i, colon = i+fp.keyLen, true
				} else if q := fp.quoted; q != "" && i+len(q) <= len(s) && string(s[i:i+len(q)]) == q {
					i += len(q) - 1
				} else {
					fi = -1
				}
			} else {
				fi = -1
			}
			if fi < 0 {
				ks := i
				for i < len(s) && s[i] != '"' && s[i] != '\\' {
					i++
				}
				if i >= len(s) || s[i] != '"' {
					return false
				}
				var found bool
				if fi, found = d.top.index[string(s[ks:i])]; !found {
					fi = -1
				}
			}
			if !colon {
				i = skipWS(s, i+1)
				if i >= len(s) || s[i] != ':' {
					return false
				}
				i++
			}
			i = skipWS(s, i)

			// Value.
			if fi < 0 {
				var ok bool
				if i, ok = skipValue(s, i, 2); !ok {
					return false
				}
			} else {
				d.next = fi + 1
				taken := false
				if fp := &d.top.fields[fi]; fp.one >= 0 {
					// The commonest case, inline: a scalar into the one
					// column reading the field, which has a fast setter
					// (the loop below for one column, written out: the
					// loop over fp.cols cost about 20 instructions a field).
					if t, text, next, ok := d.scalar(s, i); ok {
						ci := fp.one
						if d.seen[ci] == d.gen {
							return false // a field twice: the fastjson path keeps the last
						}
						d.seen[ci] = d.gen
						d.filled++
						if t == tokNull {
							decode.AppendDefault(d.cols[ci].null, c.Cols[ci])
						} else if !fp.set(d, t, text, c.Cols[ci]) && !d.diagScalar(s, i, ci, c) {
							return false
						}
						i, taken = next, true
					}
				} else if fp.fast {
					// A scalar into columns with fast setters.
					if t, text, next, ok := d.scalar(s, i); ok {
						for _, ci := range fp.cols {
							if d.seen[ci] == d.gen {
								return false // a field twice: the fastjson path keeps the last
							}
							d.seen[ci] = d.gen
							d.filled++
							if t == tokNull {
								decode.AppendDefault(d.cols[ci].null, c.Cols[ci])
							} else if !d.fastSet[ci](d, t, text, c.Cols[ci]) && !d.diagScalar(s, i, ci, c) {
								return false
							}
						}
						i, taken = next, true
					}
				}
				if !taken {
					var ok bool
					if i, ok = d.fastField(s, i, fi, c); !ok {
						return false
					}
				}
			}

			i = skipWS(s, i)
			if i >= len(s) {
				return false
			}
			if s[i] == ',' {
				i = skipWS(s, i+1)
				continue
			}
			if s[i] != '}' {
				return false
			}
			i++
			break
		}
	}
	if skipWS(s, i) != len(s) {
		return false
	}
	if d.filled != len(d.cols)-d.skipped {
		for ci := range d.cols {
			if d.seen[ci] != d.gen && (d.skip == nil || !d.skip[ci]) {
				c.Cols[ci].AppendDefault()
				c.MarkAbsent(ci)
			}
		}
	}
	return true
}
