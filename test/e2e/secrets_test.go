package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// TestSecretsNeverShown gives every secret key a distinct secret (the
// Kafka SASL password from the environment, the ClickHouse password from a
// password_file, the registry password inline), runs the binary with debug
// logs through startup, an outage of the registry and a record it
// dead-letters, and a graceful stop, and finds none of the secrets in
// its output, on /metrics or in `etl validate -print`.
func TestSecretsNeverShown(t *testing.T) {
	secrets := map[string]string{
		"kafka":      "kafka-SECRET-6f1c",
		"clickhouse": "clickhouse-SECRET-0b7e",
		"registry":   "registry-SECRET-94ad",
	}
	kb := testenv.Kafka(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "etl", secrets["kafka"]),
		kfake.SeedTopics(3, "events", "events.dlq"))
	ch := testenv.ClickHouseWith(t, testenv.CHOptions{Users: map[string]string{"etl": secrets["clickhouse"]}})
	ch.Exec(t, gen.TableDDL("default", "events"))
	reg := registrytest.New(t)
	reg.RequireBasicAuth("etl", secrets["registry"])
	id := reg.Register("events-value", gen.AvroSchema)
	schema := avro.MustParse(gen.AvroSchema)

	const n = 500
	cl := kb.Client(t, kgo.SASL(scramAuth(secrets["kafka"])), kgo.DefaultProduceTopic("events"))
	var recs []*kgo.Record
	for i := uint64(0); i < n; i++ {
		payload, err := avro.Marshal(schema, gen.Make(seed, i).Avro())
		if err != nil {
			t.Fatal(err)
		}
		v := schemaregistry.AppendFrame(nil, id, payload)
		if i == 100 {
			v = v[:len(v)-3] // truncated: dead-lettered
		}
		recs = append(recs, &kgo.Record{Value: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	chPw := filepath.Join(dir, "clickhouse-password")
	if err := os.WriteFile(chPw, []byte(secrets["clickhouse"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	metrics := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cfg := writeConfig(t, fmt.Sprintf(`pipeline: {name: secrets}
source:
  kafka:
    brokers: [%q]
    topics: [events]
    group_id: secrets
    sasl: {mechanism: SCRAM-SHA-256, username: etl, password: "${KAFKA_PASSWORD}"}
decode:
  format: avro
  avro:
    framing: confluent
    registry: {url: %q, username: etl, password: %q}
  on_error: dlq
  dlq: {topic: events.dlq}
sink:
  clickhouse:
    addr: [%q]
    table: events
    user: etl
    password_file: %s
    batch: {max_rows: 1000, linger: 200ms}
checkpoint: {commit_interval: 200ms}
metrics: {listen: %q}
log: {level: debug, format: text}
`, kb.Addr(), reg.URL(), secrets["registry"], ch.TCPAddr(), chPw, metrics))

	bin := testenv.Build(t, "./cmd/etl")
	env := append(os.Environ(), "KAFKA_PASSWORD="+secrets["kafka"])
	printed, err := (&exec.Cmd{Path: bin, Args: []string{bin, "validate", "-print", "-config", cfg}, Env: env}).CombinedOutput()
	if err != nil {
		t.Fatalf("validate -print: %v\n%s", err, printed)
	}

	reg.SetDown(true) // fetches fail (logged) until it is back
	logf, err := os.Create(filepath.Join(dir, "etl.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", cfg)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("etl log:\n%s", b)
		}
	}()
	testenv.WaitFor(t, "etl to log the registry unreachable", time.Minute, func() bool {
		b, _ := os.ReadFile(logf.Name())
		return strings.Contains(string(b), "schema registry unreachable")
	})
	reg.SetDown(false)
	testenv.Eventually(t, "every good row", time.Minute, func() error {
		if got := ch.Count(t, "default.events"); got < n-1 {
			b, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("%d rows; log:\n%s", got, tail(b))
		}
		return nil
	})
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scraped, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("etl exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("etl did not stop")
	}
	logs, _ := os.ReadFile(logf.Name())

	// The run did go through what it should have logged.
	for _, want := range []string{"level=DEBUG", "schema registry unreachable", "on_error=dlq", "stopped"} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("the log lacks %q; the test did not exercise it", want)
		}
	}
	for name, secret := range secrets {
		for what, text := range map[string][]byte{"validate -print": printed, "the log": logs, "/metrics": scraped} {
			if strings.Contains(string(text), secret) {
				t.Errorf("the %s secret appears in %s", name, what)
			}
		}
	}
}

func scramAuth(pass string) sasl.Mechanism {
	return scram.Auth{User: "etl", Pass: pass}.AsSha256Mechanism()
}

func tail(b []byte) string {
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}
