package chunk

// Tuple is a Tuple(T1, ..., Tn) column: one column per element. A decoder
// appends one value to every element column, then calls EndRow.
type Tuple struct {
	// Elems are the element columns, each of Len rows.
	Elems []Column
	types []*Type
	rows  int
	tmpl  *Tuple // the one-row default, nil for each element's default
}

// EndRow counts the row whose elements were just appended.
func (c *Tuple) EndRow() { c.rows++ }

// ElemTypes are the element types the column was built for (the Type's
// Elems): a LowCardinality element is kept in a column of its inner type,
// and only its type tells.
func (c *Tuple) ElemTypes() []*Type { return c.types }

// Row implements Column: the row's elements, each as its column's Row.
func (c *Tuple) Row(i int) any {
	out := make([]any, len(c.Elems))
	for j, e := range c.Elems {
		out[j] = e.Row(i)
	}
	return out
}

// Len implements Column.
func (c *Tuple) Len() int { return c.rows }

// Size implements Column.
func (c *Tuple) Size() int {
	n := 0
	for _, e := range c.Elems {
		n += e.Size()
	}
	return n
}

// AppendDefault implements Column: each element's AppendDefault, unless
// the table's DEFAULT gives the tuple.
func (c *Tuple) AppendDefault() {
	if c.tmpl != nil {
		c.appendRows(c.tmpl, 0, 1)
		return
	}
	for _, e := range c.Elems {
		e.AppendDefault()
	}
	c.rows++
}

// Truncate implements Column; it also drops the elements of a partly
// appended row.
func (c *Tuple) Truncate(n int) {
	for _, e := range c.Elems {
		e.Truncate(n)
	}
	c.rows = n
}

// Map is a Map(K, V) column: key and value columns plus the end of each
// row, as the server stores it. Entries keep their order (and duplicate
// keys, which the server keeps too).
type Map struct {
	// Keys and Values hold the entries of every row back to back.
	Keys, Values Column
	// Ends[i] is the end of row i's entries in Keys and Values.
	Ends      []int
	keyType   *Type
	valueType *Type
	tmpl      *Map // the one-row default, nil for an empty map
}

// EndRow closes the current row after its keys and values were appended.
func (c *Map) EndRow() { c.Ends = append(c.Ends, c.Keys.Len()) }

// KeyType and ValueType are K and V of the Map(K, V) the column was built
// for (the Type's Key and Elem).
func (c *Map) KeyType() *Type { return c.keyType }

// ValueType: see KeyType.
func (c *Map) ValueType() *Type { return c.valueType }

// Row implements Column: the row's entries as [key, value] pairs, in
// order, each as its column's Row.
func (c *Map) Row(i int) any {
	start := 0
	if i > 0 {
		start = c.Ends[i-1]
	}
	out := make([][2]any, c.Ends[i]-start)
	for j := range out {
		out[j] = [2]any{c.Keys.Row(start + j), c.Values.Row(start + j)}
	}
	return out
}

// Len implements Column.
func (c *Map) Len() int { return len(c.Ends) }

// Size implements Column.
func (c *Map) Size() int { return c.Keys.Size() + c.Values.Size() + 8*len(c.Ends) }

// AppendDefault implements Column: an empty map, unless the table's
// DEFAULT gives entries.
func (c *Map) AppendDefault() {
	if c.tmpl != nil {
		c.appendRows(c.tmpl, 0, 1)
		return
	}
	c.EndRow()
}

// Truncate implements Column; it also drops the entries of a partly
// appended row.
func (c *Map) Truncate(n int) {
	end := 0
	if n > 0 {
		end = c.Ends[n-1]
	}
	c.Keys.Truncate(end)
	c.Values.Truncate(end)
	c.Ends = c.Ends[:n]
}

// newComposite returns an empty Tuple or Map column for t.
func newComposite(t *Type) (Column, error) {
	switch t.Kind {
	case KindTuple:
		c := &Tuple{types: t.Elems}
		for _, et := range t.Elems {
			e, err := NewColumn(et)
			if err != nil {
				return nil, err
			}
			c.Elems = append(c.Elems, e)
		}
		return c, nil
	case KindMap:
		k, err := NewColumn(t.Key)
		if err != nil {
			return nil, err
		}
		v, err := NewColumn(t.Elem)
		if err != nil {
			return nil, err
		}
		return &Map{Keys: k, Values: v, keyType: t.Key, valueType: t.Elem}, nil
	}
	return nil, nil
}
