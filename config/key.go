package config

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Key is decode.key: how record keys are decoded, for columns and
// transform expressions to read their fields as _key.NAME.
type Key struct {
	// Format is none (the key is bytes: _key), string (UTF-8 text), json
	// (a JSON object) or avro (Confluent-framed, its schema from
	// decode.avro.registry). Empty means none.
	Format string `yaml:"format"`
}

// The key formats.
const (
	KeyNone   = "none"
	KeyString = "string"
	KeyJSON   = "json"
	KeyAvro   = "avro"
)

// KeyFormat is decode.key.format, none when unset.
func (c *Config) KeyFormat() string {
	if c.Decode.Key.Format == "" {
		return KeyNone
	}
	return c.Decode.Key.Format
}

// keyFieldPrefix starts a source that names a field of the decoded key
// (meta.KeyPrefix).
const keyFieldPrefix = "_key."

// exprKeyField finds the key's fields and _tombstone in an expression.
var (
	exprKeyField  = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.])(_key\.[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)`)
	exprTombstone = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.])_tombstone(?:$|[^A-Za-z0-9_])`)
)

// exprTexts returns the text of every expression of the transform chain.
func (c *Config) exprTexts() []string {
	var out []string
	for _, st := range c.Transform {
		if st.Filter != nil {
			out = append(out, st.Filter.Text)
		}
		for _, a := range st.Set {
			out = append(out, a.Expr.Text)
		}
		if st.Route != nil {
			for _, ru := range st.Route.Rules {
				if ru.When != nil {
					out = append(out, ru.When.Text)
				}
			}
		}
	}
	return out
}

// ExprKeyFields returns the key's fields (_key.NAME) the transform
// chain's expressions read, sorted. A name in a string literal counts
// too: at worst the key is decoded for nothing.
func (c *Config) ExprKeyFields() []string {
	seen := map[string]bool{}
	for _, t := range c.exprTexts() {
		for _, m := range exprKeyField.FindAllStringSubmatch(t, -1) {
			seen[m[1]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Tombstones reports whether records with a null value (Kafka tombstones)
// go through the transform chain: when an expression reads _tombstone.
// Otherwise a tombstone is rejected as corrupt, as it always is without
// transforms.
func (c *Config) Tombstones() bool {
	return slices.ContainsFunc(c.exprTexts(), exprTombstone.MatchString)
}

// keyRules check decode.key.
var keyRules = []rule{
	{path: "decode.key.format", when: func(c *Config) bool { return c.Decode.Key.Format != "" }, check: func(c *Config) string {
		return oneOf(c.Decode.Key.Format, KeyNone, KeyString, KeyJSON, KeyAvro)
	}},
	// An Avro key names its writer schema by registry id: the value's
	// registry serves it.
	{path: "decode.key.format", when: func(c *Config) bool { return c.Decode.Key.Format == KeyAvro }, check: func(c *Config) string {
		if c.Decode.Format != FormatAvro || c.Decode.Avro.Framing != "confluent" || c.Decode.Avro.Registry == nil || c.Decode.Avro.Registry.URL == "" {
			return "avro keys are Confluent-framed and their schemas come from decode.avro.registry: set decode.format: avro with decode.avro.framing: confluent and a registry url"
		}
		return ""
	}},
	{path: "decode.key.format", at: "transform", check: func(c *Config) string {
		f := c.KeyFormat()
		if f == KeyJSON || f == KeyAvro {
			return ""
		}
		for _, s := range c.SinkList() {
			if s.ClickHouse == nil {
				continue
			}
			cols := make([]string, 0, len(s.ClickHouse.Columns))
			for col := range s.ClickHouse.Columns {
				cols = append(cols, col)
			}
			sort.Strings(cols)
			for _, col := range cols {
				if src := s.ClickHouse.Columns[col]; strings.HasPrefix(src, keyFieldPrefix) {
					return fmt.Sprintf("is %s, but %s.columns maps %s to %s, a field of the key: set decode.key.format to json or avro", f, c.KeyPath(s), col, src)
				}
			}
		}
		if ks := c.ExprKeyFields(); len(ks) > 0 {
			return fmt.Sprintf("is %s, but the transform reads %s, a field of the key: set decode.key.format to json or avro", f, ks[0])
		}
		return ""
	}},
}
