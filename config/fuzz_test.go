package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzConfig: Parse never panics, whatever the file and the environment.
// It fails with an *Errors listing at least one problem, each with a
// message, or returns a configuration whose Redacted rendering works and
// shows no secret; parsing the same input again gives the same outcome.
// A non-empty env is the value of every variable whose name's length has
// the parity of env's (the others are unset), so that ${VAR},
// ${VAR:-default} and ${VAR:?message} take both paths.
func FuzzConfig(f *testing.F) {
	var files []string
	for _, pattern := range []string{"../configs/*.yaml", "testdata/*.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		f.Fatal("no configuration files to seed from")
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "")
		f.Add(data, "s3cr3t-value")
		f.Add(data, "s3cr3t-valu")
	}
	for _, s := range []string{
		"",
		"pipeline: {name: x\n",
		"pipeline:\n  name: [a, b\n",
		"---\na: 1\n---\nb: 2\n",
		"pipeline: {workers: -1}\n",
		"source: {kafka: {brokers: [\"${UNSET:?need brokers}\"]}}\n",
		"sink: {clickhouse: {password: ${PW}}}\n",
		"sink: {clickhouse: {password: \"${PW:-fallback}\", addr: [\"h:9000\"]}}\n",
		"a: &x [*x]\n",
		"\t- tab\n",
		"pipeline: !!binary aGVsbG8=\n",
		"checkpoint: {commit_interval: 5 parsecs}\n",
		"sink: {clickhouse: {batch: {max_bytes: 99999999999999999999TiB}}}\n",
		"${\n",
		"key: value\nkey: value\n",
		"\xff\xfe\x00p\x00i\x00",
	} {
		f.Add([]byte(s), "")
		f.Add([]byte(s), "v")
	}
	f.Fuzz(func(t *testing.T, data []byte, env string) {
		lookup := func(name string) (string, bool) {
			if env != "" && len(name)%2 == len(env)%2 {
				return env, true
			}
			return "", false
		}
		c, err := Parse(data, "fuzz.yaml", lookup)
		c2, err2 := Parse(data, "fuzz.yaml", lookup)
		if err != nil {
			if c != nil {
				t.Fatalf("Parse returned a configuration and an error: %v", err)
			}
			msg := err.Error()
			if strings.TrimSpace(msg) == "" {
				t.Fatalf("Parse failed with an empty message (%#v)", err)
			}
			var list *Errors
			if !errors.As(err, &list) || len(list.List) == 0 {
				t.Fatalf("Parse's error is not an *Errors listing a problem: %T %v", err, err)
			}
			for _, e := range list.List {
				if e == nil || e.Msg == "" {
					t.Fatalf("Parse's error lists a problem without a message: %q", msg)
				}
			}
			if err2 == nil || err2.Error() != msg {
				t.Fatalf("parsing again gives another outcome:\n%v\n%v", err, err2)
			}
			return
		}
		if c == nil {
			t.Fatal("Parse returned neither a configuration nor an error")
		}
		red := c.Redacted()
		if strings.HasPrefix(red, "# cannot render config") {
			t.Fatalf("Redacted: %s", red)
		}
		if err2 != nil || c2.Redacted() != red {
			t.Fatalf("parsing again gives another outcome: %v\n%s", err2, red)
		}
		// No secret shows, unless its text is in the rendering anyway
		// (the same text as another setting).
		secrets := collectSecrets(reflect.ValueOf(c).Elem(), nil)
		if len(secrets) == 0 {
			return
		}
		for _, s := range secrets {
			s.Set(reflect.ValueOf(Secret("")))
		}
		without := c.Redacted()
		for _, s := range secretValues(reflect.ValueOf(c2).Elem(), nil) {
			if s != mask && strings.Contains(red, s) && !strings.Contains(without, s) {
				t.Fatalf("Redacted shows the secret %q:\n%s", s, red)
			}
		}
	})
}

var secretType = reflect.TypeFor[Secret]()

// collectSecrets appends every settable Secret under v.
func collectSecrets(v reflect.Value, out []reflect.Value) []reflect.Value {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			out = collectSecrets(v.Elem(), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out = collectSecrets(v.Field(i), out)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			out = collectSecrets(v.Index(i), out)
		}
	case reflect.String:
		if v.Type() == secretType && v.CanSet() {
			out = append(out, v)
		}
	}
	return out
}

// secretValues appends the non-empty values of every Secret under v.
func secretValues(v reflect.Value, out []string) []string {
	for _, s := range collectSecrets(v, nil) {
		if x := s.Interface().(Secret).Value(); x != "" {
			out = append(out, x)
		}
	}
	return out
}
