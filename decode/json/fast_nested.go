package json

import (
	"strings"

	"github.com/etl-project/etl/chunk"
)

// The one-pass path reads field paths into nested objects ("after.id") as
// it reads flat fields: an object on a path is read key by key with the
// plan of its keys (objPlan), its values streamed into the columns as the
// record's own are, and every other value skipped. It gives exactly the
// fastjson path's results (fromObject) or gives up:
//   - a path's key "a.b" itself, when the record has it, is the field
//     (the record's key is read as a flat field); a record that has both
//     "a.b" and a's b gives up (the field is seen twice);
//   - an object on a path that appears twice gives up (the fastjson path
//     reads the first);
//   - a value on a path that is neither an object nor an array leaves the
//     fields below it absent, as fastjson's lookup in it finds nothing; an
//     array gives up (fastjson reads a key that is a number as an index, and
//     an Array column's path through an array of objects is a Nested
//     structure's).
// A decoder whose paths meet a field of a column (columns "a" and "a.b")
// or run deeper than maxPathDepth has no one-pass path.

// objPlan is what the one-pass path reads of an object: the record, or an
// object on the columns' field paths.
type objPlan struct {
	fields []fieldPlan    // its keys that are fields or objects on a path
	index  map[string]int // key -> position in fields
	depth  int            // its nesting depth (the record's is 1, as fastjson counts)
}

// maxPathDepth is the deepest field path the one-pass path reads; with
// maxSkipDepth it stays within fastjson.MaxDepth.
const maxPathDepth = 16

// planObjects builds the record's plan (d.top) from d.fieldPlan, with an
// object plan for each prefix of the field paths. It reports false when
// the paths are not ones the one-pass path reads.
func (d *Decoder) planObjects() bool {
	d.top = objPlan{fields: d.fieldPlan, index: d.index, depth: 1}
	for fi := range d.fieldPlan {
		d.fieldPlan[fi].fi, d.fieldPlan[fi].node = fi, -1
	}
	if !d.nested {
		return true
	}
	for _, p := range d.cols {
		if len(p.path) > maxPathDepth {
			return false
		}
	}
	// The record's plan: its flat fields (the paths' keys "a.b"
	// themselves among them) and the objects on the paths.
	d.top = objPlan{fields: append([]fieldPlan(nil), d.fieldPlan...), index: make(map[string]int, len(d.index)), depth: 1}
	for k, fi := range d.index {
		d.top.index[k] = fi
	}
	nodes := 0
	for fi, name := range d.names {
		if !strings.Contains(name, ".") {
			continue
		}
		path := strings.Split(name, ".")
		pl := &d.top
		for k, key := range path {
			pos, ok := pl.index[key]
			leaf := k == len(path)-1
			if ok {
				fp := &pl.fields[pos]
				if leaf || fp.sub == nil {
					return false // a path meets a field
				}
				pl = fp.sub
				continue
			}
			pl.index[key] = len(pl.fields)
			if leaf {
				fp := d.fieldPlan[fi]
				fp.setQuoted("")
				if !strings.ContainsAny(key, `"\`) {
					fp.setQuoted(key + `"`)
				}
				pl.fields = append(pl.fields, fp)
				break
			}
			sub := &objPlan{index: map[string]int{}, depth: pl.depth + 1}
			fp := fieldPlan{fi: -1, node: nodes, sub: sub, one: -1}
			nodes++
			if !strings.ContainsAny(key, `"\`) {
				fp.setQuoted(key + `"`)
			}
			pl.fields = append(pl.fields, fp)
			pl = sub
		}
	}
	d.nodeSeen = make([]uint32, nodes)
	return true
}

// fastNode reads the value at s[i] of an object on the paths (fp.sub), and
// returns the index past it.
func (d *Decoder) fastNode(s []byte, i int, fp *fieldPlan, c *chunk.Chunk) (int, bool) {
	if d.nodeSeen[fp.node] == d.gen {
		return i, false // the fastjson path reads the first
	}
	d.nodeSeen[fp.node] = d.gen
	if i >= len(s) {
		return i, false
	}
	switch s[i] {
	case '{':
		return d.fastObject(s, i, fp.sub, c)
	case '[':
		return i, false
	}
	return skipValue(s, i, fp.sub.depth)
}

// fastObject reads an object on the field paths at s[i] (an opening
// brace) with the plan of its keys pl, as fastRow reads the record, and
// returns the index past it.
func (d *Decoder) fastObject(s []byte, i int, pl *objPlan, c *chunk.Chunk) (int, bool) {
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return i, false
		}
		ks := i + 1
		for i = ks; i < len(s) && s[i] != '"' && s[i] != '\\'; i++ {
		}
		if i >= len(s) || s[i] != '"' {
			return i, false
		}
		fi, found := pl.index[string(s[ks:i])]
		i = skipWS(s, i+1)
		if i >= len(s) || s[i] != ':' {
			return i, false
		}
		i = skipWS(s, i+1)
		var ok bool
		switch {
		case !found:
			i, ok = skipValue(s, i, pl.depth+1)
		case pl.fields[fi].sub != nil:
			i, ok = d.fastNode(s, i, &pl.fields[fi], c)
		default:
			i, ok = d.fastField(s, i, pl.fields[fi].fi, c)
		}
		if !ok {
			return i, false
		}
		i = skipWS(s, i)
		if i >= len(s) {
			return i, false
		}
		if s[i] == ',' {
			i = skipWS(s, i+1)
			continue
		}
		if s[i] != '}' {
			return i, false
		}
		return i + 1, true
	}
}
