package config

import (
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written in YAML as a string with a unit,
// such as "500ms", "5s" or "1m30s". Bare numbers are rejected because
// their unit would be ambiguous.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes d as a duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML parses a duration string such as "5s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, msg := parseDuration(n)
	if msg != "" {
		return fmt.Errorf("line %d: %s", n.Line, msg)
	}
	*d = v
	return nil
}

func parseDuration(n *yaml.Node) (Duration, string) {
	if n.Kind != yaml.ScalarNode {
		return 0, "expected a duration such as 5s, got " + describe(n)
	}
	switch n.Tag {
	case "!!int", "!!float":
		return 0, fmt.Sprintf("invalid duration %s: use a unit, e.g. 5s", n.Value)
	case "!!str":
	default:
		return 0, "expected a duration such as 5s, got " + describe(n)
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return 0, fmt.Sprintf("invalid duration %q: use a number with a unit (ns, us, ms, s, m, h), e.g. 500ms, 5s, 1m30s", n.Value)
	}
	return Duration(v), ""
}

// ByteSize is a number of bytes. In YAML it is either a plain integer
// (bytes) or an integer immediately followed by a unit: B, KB, MB, GB
// (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024).
type ByteSize int64

// Binary byte size units.
const (
	KiB ByteSize = 1 << 10
	MiB ByteSize = 1 << 20
	GiB ByteSize = 1 << 30
	TiB ByteSize = 1 << 40
)

// byteUnits lists the accepted units. The order matters for String:
// binary units are preferred, largest first.
var byteUnits = []struct {
	name string
	size ByteSize
}{
	{"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB},
	{"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1},
}

const byteUnitList = "B, KB, MB, GB, KiB, MiB, GiB, TiB"

// String formats b with the largest unit that divides it exactly,
// for example "64MiB", "100KB" or "1000001B".
func (b ByteSize) String() string {
	if b == 0 {
		return "0"
	}
	for _, u := range byteUnits {
		if b%u.size == 0 {
			return strconv.FormatInt(int64(b/u.size), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// MarshalYAML writes b in the form String returns (0 as a plain integer).
func (b ByteSize) MarshalYAML() (any, error) {
	if b == 0 {
		return 0, nil
	}
	return b.String(), nil
}

// UnmarshalYAML parses a byte size such as 64MiB or 1048576.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, msg := parseByteSize(n)
	if msg != "" {
		return fmt.Errorf("line %d: %s", n.Line, msg)
	}
	*b = v
	return nil
}

func parseByteSize(n *yaml.Node) (ByteSize, string) {
	bad := func() (ByteSize, string) {
		return 0, fmt.Sprintf("invalid byte size %s: use an integer optionally followed (without a space) by one of %s, e.g. 64MiB", describe(n), byteUnitList)
	}
	if n.Kind != yaml.ScalarNode {
		return 0, "expected a byte size such as 64MiB, got " + describe(n)
	}
	switch n.Tag {
	case "!!int":
		v, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil {
			return bad()
		}
		return ByteSize(v), ""
	case "!!str":
	default:
		return bad()
	}
	s := n.Value
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return bad()
	}
	num, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, fmt.Sprintf("byte size %q is too large", s)
	}
	unit := ByteSize(1)
	if i < len(s) {
		found := false
		for _, u := range byteUnits {
			if u.name == s[i:] {
				unit, found = u.size, true
				break
			}
		}
		if !found {
			return bad()
		}
	}
	if num > math.MaxInt64/int64(unit) {
		return 0, fmt.Sprintf("byte size %q is too large", s)
	}
	return ByteSize(num) * unit, ""
}

// Secret is a string that must not be shown: String, GoString, MarshalText,
// MarshalYAML and LogValue return "******" when it is non-empty. Use Value
// for the real content.
type Secret string

const mask = "******"

// Value returns the secret itself.
func (s Secret) Value() string { return string(s) }

func (s Secret) masked() string {
	if s == "" {
		return ""
	}
	return mask
}

// String returns "******" for a non-empty secret.
func (s Secret) String() string { return s.masked() }

// GoString returns the masked form for %#v.
func (s Secret) GoString() string { return strconv.Quote(s.masked()) }

// MarshalText returns the masked form (used by encoding/json and others).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.masked()), nil }

// MarshalYAML returns the masked form.
func (s Secret) MarshalYAML() (any, error) { return s.masked(), nil }

// LogValue returns the masked form for log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.masked()) }

// ReadSecretFile reads a password_file: its content without one trailing
// newline (as `echo secret > file` and Kubernetes Secrets leave it). An
// empty file is an error.
func ReadSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

// secretOf is the password of a password / password_file pair.
func secretOf(pw Secret, file string) (string, error) {
	if file == "" {
		return pw.Value(), nil
	}
	return ReadSecretFile(file)
}

// secretFileProblem is the validation of a password / password_file
// pair: not both set. The file is read by the run (pipeline.Preflight
// checks it can be), not by Parse: a configuration is checked where its
// secrets are not mounted.
func secretFileProblem(pw Secret, file string) string {
	if file != "" && pw != "" {
		return "set either password or password_file, not both"
	}
	return ""
}

// SecretFiles lists the password_file keys of c that are set, with their
// paths: the key as the file spells it (sinks by name).
func (c *Config) SecretFiles() map[string]string {
	files := map[string]string{}
	if k := c.Source.Kafka; k != nil && k.SASL != nil && k.SASL.PasswordFile != "" {
		files["source.kafka.sasl.password_file"] = k.SASL.PasswordFile
	}
	if r := c.Decode.Avro.Registry; r != nil && r.PasswordFile != "" {
		files["decode.avro.registry.password_file"] = r.PasswordFile
	}
	if r := c.Decode.Protobuf.Registry; r != nil && r.PasswordFile != "" {
		files["decode.protobuf.registry.password_file"] = r.PasswordFile
	}
	for _, ns := range c.SinkList() {
		if ns.ClickHouse == nil || ns.ClickHouse.PasswordFile == "" {
			continue
		}
		key := "sink.clickhouse.password_file"
		if len(c.Sinks) > 0 {
			key = "sinks." + ns.Name + ".clickhouse.password_file"
		}
		files[key] = ns.ClickHouse.PasswordFile
	}
	return files
}

// URL is a URL that may carry a password in its userinfo
// (https://user:password@host): String, GoString, MarshalText,
// MarshalYAML and LogValue give it with the password replaced by "******"
// (Masked). Use Value for the real URL.
type URL string

// Value returns the URL itself.
func (u URL) Value() string { return string(u) }

// Masked returns the URL with the password of its userinfo, if any,
// replaced by "******". Text that does not parse as a URL is returned
// without what could be userinfo (up to the last '@' before the path).
func (u URL) Masked() string { return MaskURL(string(u)) }

// MaskURL returns s with the password of a URL's userinfo replaced by
// "******": https://user:******@host/path. Text that does not parse as a
// URL is cut to "******@" and what follows its last '@' before any path.
func MaskURL(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	p, err := url.Parse(s)
	if err != nil {
		rest := s
		if i := strings.Index(rest, "://"); i >= 0 {
			rest = rest[i+3:]
		}
		host := rest
		if i := strings.IndexAny(host, "/?#"); i >= 0 {
			host = host[:i]
		}
		if i := strings.LastIndexByte(host, '@'); i >= 0 {
			return strings.Replace(s, host[:i], mask, 1)
		}
		return s
	}
	if p.User == nil {
		return s
	}
	if _, has := p.User.Password(); !has {
		return s
	}
	p.User = url.UserPassword(p.User.Username(), mask)
	return strings.Replace(p.String(), url.QueryEscape(mask), mask, 1)
}

// String returns the masked URL.
func (u URL) String() string { return u.Masked() }

// GoString returns the masked URL for %#v.
func (u URL) GoString() string { return strconv.Quote(u.Masked()) }

// MarshalText returns the masked URL.
func (u URL) MarshalText() ([]byte, error) { return []byte(u.Masked()), nil }

// MarshalYAML returns the masked URL.
func (u URL) MarshalYAML() (any, error) { return u.Masked(), nil }

// LogValue returns the masked URL for log/slog.
func (u URL) LogValue() slog.Value { return slog.StringValue(u.Masked()) }

// describe renders a node for error messages: strings quoted, other
// scalars as written, collections by kind.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return strconv.Quote(n.Value)
		case "!!null":
			return "null"
		}
		return strings.TrimSpace(n.Value)
	}
	return "an unsupported YAML node"
}
