package testenv

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// CHOptions configures a server started by [ClickHouseWith]. The zero value
// gives the same server as [ClickHouse] (plus the watchdog).
type CHOptions struct {
	// ZooKeeper is the host:port of a ZooKeeper server ([ZK.Addr]). With it
	// the config gets <zookeeper>, the <macros> below and an
	// interserver_http_port on 127.0.0.1 of its own (replicas fetch parts
	// from each other there), so that Replicated*MergeTree tables work.
	ZooKeeper string

	// ZooKeeperSessionTimeout sets <session_timeout_ms> (30 s when zero):
	// how long the server keeps a ZooKeeper session alive without an
	// answer, e.g. while a test has the ZooKeeper frozen or stopped.
	ZooKeeperSessionTimeout time.Duration

	// Shard and Replica are the {shard} and {replica} macros. With
	// ZooKeeper set, Shard defaults to "01" and Replica to a name unique in
	// the test process ("r1", "r2", ...), so that servers sharing one
	// ZooKeeper never register as the same replica by accident.
	Shard, Replica string

	// Macros holds more macros, by name.
	Macros map[string]string

	// Clusters are the <remote_servers>, by cluster name: what
	// system.clusters shows and what Distributed tables use. SetClusters
	// changes them on a running server (e.g. once every server of a
	// cluster has started and has its ports).
	Clusters map[string][]CHShard

	// TLSCert and TLSKey (PEM, e.g. from [CA.Issue]) make the server
	// serve the native protocol over TLS on a free port of its own
	// (<tcp_port_secure>, [CH.SecureAddr]) with that certificate.
	TLSCert, TLSKey []byte
	// SecureOnly, with TLSCert, removes the plain native port: native
	// connections are taken only over TLS. HTTP stays on, for the tests'
	// own queries.
	SecureOnly bool
	// Users adds users, by name, with these passwords (the default
	// profile and quota, from 127.0.0.1).
	Users map[string]string
	// Timezone sets the server's <timezone> (UTC when empty), the zone
	// of its DateTime columns without one of their own.
	Timezone string
}

// CHShard is one shard of a cluster in [CHOptions.Clusters].
type CHShard struct {
	// Replicas are the native-protocol addresses ([CH.TCPAddr]) of the
	// shard's replicas, as host:port.
	Replicas []string
	// Weight is the shard's weight; 0 leaves the server's default, 1.
	Weight int
	// InternalReplication sets <internal_replication>: a Distributed
	// table writes to one replica and lets replication do the rest.
	InternalReplication bool
}

// replicaSeq numbers the default replica names of ClickHouseWith.
var replicaSeq atomic.Int64

// ClickHouseWith is [ClickHouse] with options: a server that uses a
// ZooKeeper (for Replicated*MergeTree tables), macros and clusters. Like
// ClickHouse it runs in a temporary folder of t on free ports (one more, the
// interserver port, with ZooKeeper set) and is stopped when t finishes. It
// is also tied to the test process: should the process die without running
// t's cleanup, a watchdog stops the server within about a second.
//
// Two servers given the same ZooKeeper, the same Shard and different
// Replica names replicate a table created on both with
// ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/NAME', '{replica}').
func ClickHouseWith(t testing.TB, opts CHOptions) *CH {
	t.Helper()
	skipShort(t, "a ClickHouse server")
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("testenv: start ClickHouse: %v", err)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatalf("testenv: start ClickHouse: %v", err)
	}
	if opts.ZooKeeper != "" {
		if opts.Shard == "" {
			opts.Shard = "01"
		}
		if opts.Replica == "" {
			opts.Replica = fmt.Sprintf("r%d", replicaSeq.Add(1))
		}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.IdleConnTimeout = chIdleConnTimeout
	ch := &CH{
		script:    filepath.Join(root, "scripts", "clickhouse.sh"),
		dir:       dir,
		transport: transport,
		client:    &http.Client{Transport: transport},
		opts:      opts,
	}
	// The files live outside config.d: the script copies them in on every
	// start, and SetClusters rewrites both copies.
	if err := os.MkdirAll(filepath.Join(dir, "testenv"), 0o755); err != nil {
		t.Fatalf("testenv: start ClickHouse: %v", err)
	}
	var extra []string
	if conf := opts.serverXML(); conf != "" {
		f := filepath.Join(dir, "testenv", "testenv-server.xml")
		if err := os.WriteFile(f, []byte(conf), 0o644); err != nil {
			t.Fatalf("testenv: start ClickHouse: %v", err)
		}
		extra = append(extra, "--extra-config", f)
	}
	if len(opts.Clusters) > 0 {
		f, err := ch.writeClusters(opts.Clusters, false)
		if err != nil {
			t.Fatalf("testenv: start ClickHouse: %v", err)
		}
		extra = append(extra, "--extra-config", f)
	}
	extra = append(extra, "--watch-pid", strconv.Itoa(os.Getpid()))
	if len(opts.Users) > 0 {
		// The server merges users.d next to users.xml into its users.
		if err := os.MkdirAll(filepath.Join(dir, "users.d"), 0o755); err != nil {
			t.Fatalf("testenv: start ClickHouse: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "users.d", "testenv-users.xml"), []byte(usersXML(opts.Users)), 0o644); err != nil {
			t.Fatalf("testenv: start ClickHouse: %v", err)
		}
	}
	for attempt := 1; ; attempt++ {
		ch.tcpPort, ch.httpPort = FreePort(t), FreePort(t)
		ch.extraArgs = extra
		if opts.TLSCert != nil {
			ch.securePort = FreePort(t)
			f, err := ch.writeTLS()
			if err != nil {
				t.Fatalf("testenv: start ClickHouse: %v", err)
			}
			ch.extraArgs = append(slices.Clone(extra), "--extra-config", f)
		}
		if opts.ZooKeeper != "" {
			ch.interserverPort = FreePort(t)
			ch.extraArgs = append([]string{"--interserver-port", strconv.Itoa(ch.interserverPort)}, extra...)
		}
		begin := time.Now()
		out, code, err := ch.runScript("start")
		if err == nil {
			t.Logf("testenv: ClickHouse ready in %v: tcp %s, http %s%s, dir %s",
				time.Since(begin).Round(time.Millisecond), ch.TCPAddr(), ch.HTTPAddr(), ch.replicationLog(), ch.dir)
			break
		}
		if code == chPortInUseExit && attempt < chStartAttempts {
			t.Logf("testenv: ClickHouse ports %d/%d/%d taken, retrying with new ports", ch.tcpPort, ch.httpPort, ch.interserverPort)
			continue
		}
		t.Fatalf("testenv: start ClickHouse with %s: %v\n%s\n"+
			"These tests need a real ClickHouse server: install it with "+
			"`apt-get install clickhouse-server clickhouse-client` (Debian) or run the tests as root so the script can.",
			ch.script, err, out)
	}
	t.Cleanup(func() {
		if err := ch.stop(); err != nil {
			t.Errorf("testenv: stop ClickHouse: %v", err)
		}
	})
	return ch
}

// SecureAddr is the native protocol's TLS address (CHOptions.TLSCert).
func (ch *CH) SecureAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ch.securePort))
}

// writeTLS writes the certificate, its key and the config file that
// serves them on the secure port, and returns the config file's path.
func (ch *CH) writeTLS() (string, error) {
	d := filepath.Join(ch.dir, "testenv")
	cert, key := filepath.Join(d, "server.pem"), filepath.Join(d, "server.key")
	if err := os.WriteFile(cert, ch.opts.TLSCert, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(key, ch.opts.TLSKey, 0o600); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<!-- Written by testenv.ClickHouseWith. -->\n<yandex>\n")
	fmt.Fprintf(&b, "    <tcp_port_secure>%d</tcp_port_secure>\n", ch.securePort)
	if ch.opts.SecureOnly {
		b.WriteString("    <tcp_port remove=\"1\"/>\n")
	}
	fmt.Fprintf(&b, "    <openSSL><server><certificateFile>%s</certificateFile><privateKeyFile>%s</privateKeyFile>"+
		"<verificationMode>none</verificationMode><loadDefaultCAFile>false</loadDefaultCAFile>"+
		"<cacheSessions>true</cacheSessions><disableProtocols>sslv2,sslv3</disableProtocols><preferServerCiphers>true</preferServerCiphers>"+
		"</server></openSSL>\n", xmlText(cert), xmlText(key))
	b.WriteString("</yandex>\n")
	f := filepath.Join(d, "testenv-tls.xml")
	return f, os.WriteFile(f, []byte(b.String()), 0o644)
}

// SetUsers replaces the users of CHOptions.Users (their passwords) and
// waits (at most 30 s) until each one logs in with its new password: the
// server reloads users.d by itself. Connections already open stay logged
// in; new ones need the new password. It works on a server started with
// CHOptions.Users set.
func (ch *CH) SetUsers(t testing.TB, users map[string]string) {
	t.Helper()
	if len(ch.opts.Users) == 0 {
		t.Fatalf("testenv: SetUsers on a server started without CHOptions.Users")
	}
	if err := os.WriteFile(filepath.Join(ch.dir, "users.d", "testenv-users.xml"), []byte(usersXML(users)), 0o644); err != nil {
		t.Fatalf("testenv: set users: %v", err)
	}
	ch.opts.Users = users
	// The server checks its config files every 2 s by their modification
	// time in whole seconds; SYSTEM RELOAD CONFIG reloads them now.
	deadline := time.Now().Add(30 * time.Second)
	for _, name := range slices.Sorted(maps.Keys(users)) {
		for try := 0; ; try++ {
			if try%20 == 0 {
				if _, err := ch.QueryErr("SYSTEM RELOAD CONFIG"); err != nil {
					t.Logf("testenv: SYSTEM RELOAD CONFIG: %v", err)
				}
			}
			err := ch.login(name, users[name])
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("testenv: user %s cannot log in with the new password 30 s after SetUsers: %v", name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// login runs SELECT 1 over HTTP as user with password.
func (ch *CH) login(user, password string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ch.HTTPAddr()+"/", strings.NewReader("SELECT 1"))
	if err != nil {
		return err
	}
	req.SetBasicAuth(user, password)
	resp, err := ch.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	return nil
}

// usersXML returns the users.d file of CHOptions.Users.
func usersXML(users map[string]string) string {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<!-- Written by testenv.ClickHouseWith. -->\n<yandex>\n    <users>\n")
	for _, name := range slices.Sorted(maps.Keys(users)) {
		fmt.Fprintf(&b, "        <%s><password>%s</password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>"+
			"<profile>default</profile><quota>default</quota></%s>\n", name, xmlText(users[name]), name)
	}
	b.WriteString("    </users>\n</yandex>\n")
	return b.String()
}

func (ch *CH) replicationLog() string {
	if ch.opts.ZooKeeper == "" {
		return ""
	}
	return fmt.Sprintf(", interserver %s, zookeeper %s, shard %q replica %q",
		ch.InterserverAddr(), ch.opts.ZooKeeper, ch.opts.Shard, ch.opts.Replica)
}

// InterserverAddr returns the host:port of the interserver HTTP port, or ""
// for a server started without a ZooKeeper.
func (ch *CH) InterserverAddr() string {
	if ch.interserverPort == 0 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ch.interserverPort))
}

// Shard returns the {shard} macro given to ClickHouseWith ("" if none).
func (ch *CH) Shard() string { return ch.opts.Shard }

// Replica returns the {replica} macro given to ClickHouseWith, or the
// default it chose ("" if none).
func (ch *CH) Replica() string { return ch.opts.Replica }

// SetClusters replaces the server's <remote_servers> with clusters and waits
// (at most 30 s) until system.clusters shows exactly them: the server
// reloads its config by itself (measured: within about 0.5 s). Clusters set
// earlier and missing from clusters are removed. It works on a server from
// ClickHouse too.
func (ch *CH) SetClusters(t testing.TB, clusters map[string][]CHShard) {
	t.Helper()
	old := ch.opts.Clusters
	if _, err := ch.writeClusters(clusters, true); err != nil {
		t.Fatalf("testenv: set clusters: %v", err)
	}
	ch.opts.Clusters = clusters
	names := map[string]bool{}
	for name := range old {
		names[name] = true
	}
	for name := range clusters {
		names[name] = true
	}
	quoted := make([]string, 0, len(names))
	for name := range names {
		quoted = append(quoted, "'"+strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(name)+"'")
	}
	slices.Sort(quoted)
	if len(quoted) == 0 {
		return
	}
	want := clustersTSV(clusters)
	query := "SELECT cluster, shard_num, shard_weight, replica_num, host_name, port FROM system.clusters WHERE cluster IN (" +
		strings.Join(quoted, ", ") + ") ORDER BY cluster, shard_num, replica_num"
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := ch.QueryErr(query)
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("testenv: system.clusters did not show the new clusters after 30 s (err %v):\ngot:\n%s\nwant:\n%s", err, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeClusters writes clusters as the <remote_servers> file kept in
// DIR/testenv and, when live, also into DIR/config.d for the running server
// to reload. It returns the first file's path.
func (ch *CH) writeClusters(clusters map[string][]CHShard, live bool) (string, error) {
	conf := clustersXML(clusters)
	if err := os.MkdirAll(filepath.Join(ch.dir, "testenv"), 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(ch.dir, "testenv", "testenv-clusters.xml")
	if err := writeFileAtomic(src, []byte(conf)); err != nil {
		return "", err
	}
	if live {
		if err := os.MkdirAll(filepath.Join(ch.dir, "config.d"), 0o755); err != nil {
			return "", err
		}
		if err := writeFileAtomic(filepath.Join(ch.dir, "config.d", "testenv-clusters.xml"), []byte(conf)); err != nil {
			return "", err
		}
	}
	return src, nil
}

// writeFileAtomic writes b to path through a temporary file (not named
// *.xml, so the server never reads it half-written) and a rename.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// serverXML returns the config file for ZooKeeper and macros, or "" when
// there is nothing to set.
func (o CHOptions) serverXML() string {
	macros := map[string]string{}
	for k, v := range o.Macros {
		macros[k] = v
	}
	if o.Shard != "" {
		macros["shard"] = o.Shard
	}
	if o.Replica != "" {
		macros["replica"] = o.Replica
	}
	if o.ZooKeeper == "" && len(macros) == 0 && o.Timezone == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<!-- Written by testenv.ClickHouseWith. -->\n<yandex>\n")
	if o.Timezone != "" {
		fmt.Fprintf(&b, "    <timezone>%s</timezone>\n", xmlText(o.Timezone))
	}
	if o.ZooKeeper != "" {
		host, port, err := net.SplitHostPort(o.ZooKeeper)
		if err != nil {
			host, port = o.ZooKeeper, "2181"
		}
		b.WriteString("    <zookeeper>\n")
		fmt.Fprintf(&b, "        <node index=\"1\"><host>%s</host><port>%s</port></node>\n", xmlText(host), xmlText(port))
		if o.ZooKeeperSessionTimeout > 0 {
			fmt.Fprintf(&b, "        <session_timeout_ms>%d</session_timeout_ms>\n", o.ZooKeeperSessionTimeout.Milliseconds())
		}
		b.WriteString("    </zookeeper>\n")
	}
	if len(macros) > 0 {
		b.WriteString("    <macros>\n")
		for _, k := range slices.Sorted(maps.Keys(macros)) {
			fmt.Fprintf(&b, "        <%s>%s</%s>\n", k, xmlText(macros[k]), k)
		}
		b.WriteString("    </macros>\n")
	}
	b.WriteString("</yandex>\n")
	return b.String()
}

// clustersXML returns the <remote_servers> config file for clusters.
func clustersXML(clusters map[string][]CHShard) string {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<!-- Written by testenv (ClickHouseWith, SetClusters). -->\n<yandex>\n")
	// replace="replace": clusters set earlier and missing now disappear.
	b.WriteString("    <remote_servers replace=\"replace\">\n")
	for _, name := range slices.Sorted(maps.Keys(clusters)) {
		fmt.Fprintf(&b, "        <%s>\n", name)
		for _, sh := range clusters[name] {
			b.WriteString("            <shard>\n")
			if sh.Weight > 0 {
				fmt.Fprintf(&b, "                <weight>%d</weight>\n", sh.Weight)
			}
			fmt.Fprintf(&b, "                <internal_replication>%t</internal_replication>\n", sh.InternalReplication)
			for _, r := range sh.Replicas {
				host, port := splitHostPortDefault(r)
				fmt.Fprintf(&b, "                <replica><host>%s</host><port>%s</port></replica>\n", xmlText(host), xmlText(port))
			}
			b.WriteString("            </shard>\n")
		}
		fmt.Fprintf(&b, "        </%s>\n", name)
	}
	b.WriteString("    </remote_servers>\n</yandex>\n")
	return b.String()
}

// clustersTSV returns what system.clusters shows for clusters (cluster,
// shard_num, shard_weight, replica_num, host_name, port; TabSeparated,
// sorted like SetClusters's query).
func clustersTSV(clusters map[string][]CHShard) string {
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(clusters)) {
		for i, sh := range clusters[name] {
			w := sh.Weight
			if w == 0 {
				w = 1
			}
			for j, r := range sh.Replicas {
				host, port := splitHostPortDefault(r)
				lines = append(lines, fmt.Sprintf("%s\t%d\t%d\t%d\t%s\t%s", name, i+1, w, j+1, host, port))
			}
		}
	}
	return strings.Join(lines, "\n")
}

// splitHostPortDefault splits host:port; a bare host gets port 9000.
func splitHostPortDefault(addr string) (string, string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, "9000"
	}
	return host, port
}

// xmlText escapes s for XML text.
func xmlText(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// UnescapeTSV undoes ClickHouse's TabSeparated escaping of one value
// (what Query returns is TabSeparated).
func UnescapeTSV(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '0':
			b.WriteByte(0)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
