package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestMakeDeterministic(t *testing.T) {
	for n := range uint64(2000) {
		a, b := Make(7, n), Make(7, n)
		if !equal(a, b) {
			t.Fatalf("Make(7, %d) differs between calls: %+v, %+v", n, a, b)
		}
		if ja, jb := a.AppendJSON(nil), b.AppendJSON(nil); !bytes.Equal(ja, jb) {
			t.Fatalf("AppendJSON of record %d differs between calls", n)
		}
	}
	// Other seeds give other data.
	same := 0
	for n := range uint64(1000) {
		a, b := Make(7, n), Make(8, n)
		if a.TS.Equal(b.TS) && a.UserID == b.UserID && a.Amount == b.Amount {
			same++
		}
	}
	if same > 0 {
		t.Errorf("%d of 1000 records equal for seeds 7 and 8", same)
	}
	// Pin the function: data already loaded by earlier runs must still be
	// checkable.
	got := string(Make(1, 1).AppendJSON(nil))
	if got != golden1 {
		t.Errorf("Make(1, 1) changed:\n got %s\nwant %s", got, golden1)
	}
}

const golden1 = `{"id":1,"ts":"2026-06-12T15:43:08Z","user_id":1937398127,"kind":"refund","amount":8542.41,"note":"kv\"ZPWH\tzKdbrA"}`

func TestMakeValues(t *testing.T) {
	var quote, backslash, nonASCII, empty, long bool
	kinds := map[string]int{}
	for n := range uint64(10000) {
		e := Make(3, n)
		if e.ID != n {
			t.Fatalf("record %d has ID %d", n, e.ID)
		}
		if e.TS.Location() != time.UTC || e.TS.Nanosecond() != 0 || e.TS.Before(Epoch) || !e.TS.Before(Epoch.AddDate(0, 0, 365)) {
			t.Fatalf("record %d: TS %v not whole UTC seconds in the year from %v", n, e.TS, Epoch)
		}
		if cents := math.Round(e.Amount * 100); cents/100 != e.Amount || cents < 0 || cents >= 1e6 {
			t.Fatalf("record %d: amount %v", n, e.Amount)
		}
		kinds[e.Kind]++
		if (e.Note == nil) != (n%7 == 0) {
			t.Fatalf("record %d: note nil is %v", n, e.Note == nil)
		}
		if e.Note == nil {
			continue
		}
		s := *e.Note
		if !utf8.ValidString(s) || utf8.RuneCountInString(s) > 40 {
			t.Fatalf("record %d: note %q", n, s)
		}
		quote = quote || strings.Contains(s, `"`)
		backslash = backslash || strings.Contains(s, `\`)
		nonASCII = nonASCII || len(s) != utf8.RuneCountInString(s)
		empty = empty || s == ""
		long = long || utf8.RuneCountInString(s) == 40
	}
	if !quote || !backslash || !nonASCII || !empty || !long {
		t.Errorf("notes lack variety: quote %v backslash %v non-ASCII %v empty %v 40 runes %v",
			quote, backslash, nonASCII, empty, long)
	}
	if len(kinds) != len(Kinds) {
		t.Errorf("kinds seen: %v", kinds)
	}
}

// jsonEvent is an event as encoding/json reads it back.
type jsonEvent struct {
	ID     uint64          `json:"id"`
	TS     json.RawMessage `json:"ts"`
	UserID uint32          `json:"user_id"`
	Kind   string          `json:"kind"`
	Amount float64         `json:"amount"`
	Note   *string         `json:"note"`
}

// parseEvent reads a record value back with encoding/json, accepting the
// timestamp in the form TSFormOf gives for its id.
func parseEvent(b []byte) (Event, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var j jsonEvent
	if err := dec.Decode(&j); err != nil {
		return Event{}, err
	}
	e := Event{ID: j.ID, UserID: j.UserID, Kind: j.Kind, Amount: j.Amount, Note: j.Note}
	switch TSFormOf(j.ID) {
	case TSRFC3339:
		var s string
		if err := json.Unmarshal(j.TS, &s); err != nil {
			return e, fmt.Errorf("ts %s: %w", j.TS, err)
		}
		ts, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return e, err
		}
		e.TS = ts.UTC()
	case TSSeconds:
		sec, err := strconv.ParseInt(string(j.TS), 10, 64)
		if err != nil {
			return e, fmt.Errorf("ts %s: %w", j.TS, err)
		}
		e.TS = time.Unix(sec, 0).UTC()
	case TSMillis:
		ms, err := strconv.ParseInt(string(j.TS), 10, 64)
		if err != nil {
			return e, fmt.Errorf("ts %s: %w", j.TS, err)
		}
		e.TS = time.UnixMilli(ms).UTC()
	}
	return e, nil
}

func equal(a, b Event) bool {
	if (a.Note == nil) != (b.Note == nil) || a.Note != nil && *a.Note != *b.Note {
		return false
	}
	return a.ID == b.ID && a.TS.Equal(b.TS) && a.UserID == b.UserID && a.Kind == b.Kind && a.Amount == b.Amount
}

func TestJSONRoundTrip(t *testing.T) {
	forms := map[TSForm]int{}
	var buf []byte
	for n := range uint64(10000) {
		want := Make(11, n)
		buf = want.AppendJSON(buf[:0])
		if !json.Valid(buf) {
			t.Fatalf("record %d is not valid JSON: %s", n, buf)
		}
		got, err := parseEvent(buf)
		if err != nil {
			t.Fatalf("record %d: %v: %s", n, err, buf)
		}
		if !equal(got, want) {
			t.Fatalf("record %d: read back %+v, want %+v: %s", n, got, want, buf)
		}
		forms[TSFormOf(n)]++
	}
	if forms[TSRFC3339] == 0 || forms[TSSeconds] == 0 || forms[TSMillis] == 0 {
		t.Errorf("timestamp forms: %v", forms)
	}
}

func TestAppendJSONShape(t *testing.T) {
	note := "a\"b\\c\u0001é"
	e := Event{ID: 5, TS: Epoch.Add(90 * time.Second), UserID: 9, Kind: "view", Amount: 12.34, Note: &note}
	want := `{"id":5,"ts":1767225690000,"user_id":9,"kind":"view","amount":12.34,"note":"a\"b\\c\u0001é"}`
	if got := string(e.AppendJSON(nil)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	e.ID, e.Note = 3, nil
	want = `{"id":3,"ts":1767225690,"user_id":9,"kind":"view","amount":12.34,"note":null}`
	if got := string(e.AppendJSON(nil)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	e.ID = 1
	want = `{"id":1,"ts":"2026-01-01T00:01:30Z","user_id":9,"kind":"view","amount":12.34,"note":null}`
	if got := string(e.AppendJSON([]byte("x"))); got != "x"+want {
		t.Errorf("got  %s\nwant x%s", got, want)
	}
}

func TestTableDDL(t *testing.T) {
	want := "CREATE TABLE IF NOT EXISTS db.events (id UInt64, ts DateTime, user_id UInt32, kind String, " +
		"amount Float64, note Nullable(String)) ENGINE = MergeTree ORDER BY id"
	if got := TableDDL("db", "events"); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := TableDDL("my-db", "t`1"); !strings.HasPrefix(got, "CREATE TABLE IF NOT EXISTS `my-db`.`t\\`1` (") {
		t.Errorf("names not quoted: %s", got)
	}
	s, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Names) != 6 || s.Types[5].Name != "Nullable(String)" {
		t.Errorf("schema %v", s.Names)
	}
}

// TestAppendJSONTSForms: each uniform form writes every record's ts in
// that form, and the same instant; mixed is AppendJSON.
func TestAppendJSONTSForms(t *testing.T) {
	for _, name := range []string{"mixed", "rfc3339", "seconds", "millis"} {
		f, err := ParseTSForm(name)
		if err != nil || f.String() != name {
			t.Fatalf("ParseTSForm(%q) = %v, %v", name, f, err)
		}
		for id := uint64(0); id < 30; id++ {
			e := Make(1, id)
			b := e.AppendJSONTS(nil, f)
			if f == TSMixed {
				if !bytes.Equal(b, e.AppendJSON(nil)) {
					t.Fatalf("id %d: mixed %s differs from AppendJSON %s", id, b, e.AppendJSON(nil))
				}
				continue
			}
			var v struct{ TS json.RawMessage }
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatalf("id %d, %s: %v in %s", id, name, err, b)
			}
			want := map[TSForm]string{
				TSRFC3339: strconv.Quote(e.TS.UTC().Format(time.RFC3339)),
				TSSeconds: strconv.FormatInt(e.TS.Unix(), 10),
				TSMillis:  strconv.FormatInt(e.TS.UnixMilli(), 10),
			}[f]
			if string(v.TS) != want {
				t.Errorf("id %d, %s: ts %s, want %s", id, name, v.TS, want)
			}
		}
	}
	if _, err := ParseTSForm("nanos"); err == nil {
		t.Error("ParseTSForm(nanos) gave no error")
	}
}
