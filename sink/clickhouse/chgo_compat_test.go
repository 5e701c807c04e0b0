package clickhouse

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/ClickHouse/ch-go/proto"
	ch "github.com/ClickHouse/clickhouse-go/v2"
)

// captureConn keeps what is written to it.
type captureConn struct {
	net.Conn
	out bytes.Buffer
}

func (c *captureConn) Write(p []byte) (int, error) { return c.out.Write(p) }

func (c *captureConn) LocalAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}

// TestCompatQueryPacket: for a server below revision 54429, the Query
// packet ch-go writes, completed by the connection, reads back with the
// server's layout for that revision (client info, then the settings as
// varints, then the stage, compression and body), whether ch-go wrote the
// client info (54420 to 54428) or the connection did (below 54420). The
// packet is read with ch-go's own ClientInfo decoder.
func TestCompatQueryPacket(t *testing.T) {
	settings := ch.Settings{"max_threads": 2, "insert_deduplicate": true, "async": false}
	for _, rev := range []int{54412, 54425} {
		cc := &captureConn{}
		cn := &chgoConn{nc: &chgoNetConn{Conn: cc}, rev: rev, settings: settings}
		if err := cn.armCompat("qid-1"); err != nil {
			t.Fatal(err)
		}
		q := proto.Query{
			ID:   "qid-1",
			Body: "INSERT INTO `db`.`t` (`a`) VALUES",
			Info: proto.ClientInfo{
				ProtocolVersion: rev, Major: 2, Minor: 7, Patch: 3,
				Interface: proto.InterfaceTCP, Query: proto.ClientQueryInitial,
				InitialUser: "u", InitialQueryID: "qid-1", InitialAddress: "10.0.0.1:9",
				OSUser: "os", ClientHostname: "host", ClientName: "ch-go", QuotaKey: "qk",
			},
			// ch-go drops these below revision 54429.
			Settings:    []proto.Setting{{Key: "max_threads", Value: "2"}},
			Compression: proto.CompressionEnabled,
		}
		var b proto.Buffer
		q.EncodeAware(&b, rev)
		data := b.Buf
		b.PutByte(0xab) // the next packet, in the same write
		if n, err := cn.nc.Write(b.Buf); err != nil || n != len(b.Buf) {
			t.Fatalf("revision %d: Write = %d, %v; want %d", rev, n, err, len(b.Buf))
		}
		out := cc.out.Bytes()
		r := proto.NewReader(bytes.NewReader(out))
		read := func(f func() (uint64, error)) uint64 {
			t.Helper()
			v, err := f()
			if err != nil {
				t.Fatalf("revision %d: %v", rev, err)
			}
			return v
		}
		str := func() string {
			t.Helper()
			s, err := r.Str()
			if err != nil {
				t.Fatalf("revision %d: %v", rev, err)
			}
			return s
		}
		if code := read(r.UVarInt); code != uint64(proto.ClientCodeQuery) {
			t.Fatalf("revision %d: packet %d", rev, code)
		}
		if id := str(); id != "qid-1" {
			t.Errorf("revision %d: query id %q", rev, id)
		}
		var info proto.ClientInfo
		if err := info.DecodeAware(r, rev); err != nil {
			t.Fatalf("revision %d: client info: %v", rev, err)
		}
		if info.ProtocolVersion != rev || info.InitialQueryID != "qid-1" || info.Interface != proto.InterfaceTCP {
			t.Errorf("revision %d: client info %+v", rev, info)
		}
		if wantName := map[bool]string{true: "ch-go", false: proto.Name + " etl"}[rev >= chgoRevClientInfo]; info.ClientName != wantName {
			t.Errorf("revision %d: client name %q, want %q (who wrote the client info)", rev, info.ClientName, wantName)
		}
		var got []string
		for {
			k := str()
			if k == "" {
				break
			}
			got = append(got, k+"="+string(rune('0'+read(r.UVarInt))))
		}
		if s := strings.Join(got, " "); s != "async=0 insert_deduplicate=1 max_threads=2" {
			t.Errorf("revision %d: settings %s", rev, s)
		}
		if stage := read(r.UVarInt); stage != uint64(proto.StageComplete) {
			t.Errorf("revision %d: stage %d", rev, stage)
		}
		if c := read(r.UVarInt); c != uint64(proto.CompressionEnabled) {
			t.Errorf("revision %d: compression %d", rev, c)
		}
		if body := str(); body != q.Body {
			t.Errorf("revision %d: body %q", rev, body)
		}
		rest, _ := io.ReadAll(r)
		if !bytes.Equal(rest, []byte{0xab}) {
			t.Errorf("revision %d: after the packet % x, want ab", rev, rest)
		}
		// The patch is used once: the next write goes as it is.
		cc.out.Reset()
		if _, err := cn.nc.Write(data); err != nil || !bytes.Equal(cc.out.Bytes(), data) {
			t.Errorf("revision %d: second write changed (%v)", rev, err)
		}
	}

	// From revision 54429, and from 54420 without settings, ch-go's packet
	// is complete.
	for _, cn := range []*chgoConn{
		{nc: &chgoNetConn{Conn: &captureConn{}}, rev: chgoRevStringSettings, settings: settings},
		{nc: &chgoNetConn{Conn: &captureConn{}}, rev: 54425},
	} {
		if err := cn.armCompat("q"); err != nil || cn.nc.patch != nil {
			t.Errorf("revision %d, %d settings: patched (%v)", cn.rev, len(cn.settings), err)
		}
	}
	// A setting such a server cannot receive is refused, permanently.
	cn := &chgoConn{nc: &chgoNetConn{Conn: &captureConn{}}, rev: 54425, settings: ch.Settings{"max_execution_time": "1.5"}}
	err := cn.armCompat("q")
	if _, ok := errors.AsType[*settingError](err); !ok || !Permanent(err) {
		t.Errorf("string setting below 54429: %v", err)
	}
}

// TestOldServerRefused: a server older than revision 54032 is refused
// with an error naming its revision, its version and the oldest served.
func TestOldServerRefused(t *testing.T) {
	if err := checkRevision("h:9000", "18.16.1", 54412); err != nil {
		t.Errorf("18.16: %v", err)
	}
	err := checkRevision("h:9000", "1.1.54000", 54000)
	want := "clickhouse h:9000: the server speaks native protocol revision 54000 (ClickHouse 1.1.54000); the oldest supported is 54032"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !Permanent(err) {
		t.Errorf("revision 54000: %v, want %q, permanent", err, want)
	}
}
