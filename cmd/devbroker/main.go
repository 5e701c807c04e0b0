// Command devbroker runs an in-process Kafka-protocol broker (franz-go's
// kfake) for development: point the ETL, kcat or a test at it instead of a
// real Kafka cluster.
//
//	devbroker -listen 127.0.0.1:19092 -topics events -partitions 6 [-data-dir DIR]
//
// Several comma-separated addresses in -listen start one broker per port.
// With -data-dir the records and committed offsets survive a restart. The
// broker listens on 127.0.0.1 only, whatever host -listen names. With
// -registry 127.0.0.1:PORT it also serves a schema registry double
// (schemaregistry/registrytest: enough of Confluent's REST API to register
// and read schemas by id, by subject and version or the latest, Avro and
// Protobuf with their references; held in memory). -tls-cert and -tls-key serve TLS
// (-tls-client-ca also requires client certificates signed by that CA),
// and -sasl MECHANISM:USER:PASSWORD (comma-separated for several) requires
// SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) with those users. It runs
// until SIGINT or SIGTERM.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// gcPercent is the broker's GOGC unless the environment sets one. The
// broker keeps every record in memory as byte slices: with Go's default of
// 100 its heap grows to twice what it holds, and on the first read of a
// large backlog every page of that growth is a page fault (0.15 CPU-s per
// million 6-column records, as much as serving them). At 25 the heap stays
// within a quarter above the records, and the collector, with few pointers
// to follow, stays under 1% of the broker's CPU.
const gcPercent = 25

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		slog.Error("devbroker failed", "err", err)
		os.Exit(1)
	}
}

type config struct {
	ports      []int
	topics     []string
	partitions int
	dataDir    string
	registry   string
	verbose    bool
	tls        *tls.Config
	sasl       [][3]string // mechanism, user, password
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("devbroker", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:19092", "broker `host:port`; comma-separated for several brokers (kfake listens on 127.0.0.1 only)")
	topics := fs.String("topics", "events", "comma-separated `topics` to create at start (empty for none)")
	partitions := fs.Int("partitions", 6, "partitions of each topic in -topics")
	dataDir := fs.String("data-dir", "", "`folder` keeping records and committed offsets across restarts (default: memory only)")
	verbose := fs.Bool("v", false, "log the broker's own messages at info level")
	registry := fs.String("registry", "", "also serve a schema registry double on this 127.0.0.1 `host:port` (default: none)")
	tlsCert := fs.String("tls-cert", "", "serve TLS with this PEM certificate `file` (needs -tls-key)")
	tlsKey := fs.String("tls-key", "", "PEM private key `file` of -tls-cert")
	clientCA := fs.String("tls-client-ca", "", "with -tls-cert: require client certificates signed by the CAs of this PEM `file` (mutual TLS)")
	saslUsers := fs.String("sasl", "", "require SASL: comma-separated `MECHANISM:USER:PASSWORD` entries (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}

	cfg := config{partitions: *partitions, dataDir: *dataDir, registry: *registry, verbose: *verbose}
	if (*tlsCert == "") != (*tlsKey == "") || *clientCA != "" && *tlsCert == "" {
		return config{}, errors.New("-tls-cert and -tls-key go together, and -tls-client-ca needs them")
	}
	if *tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			return config{}, fmt.Errorf("-tls-cert/-tls-key: %w", err)
		}
		cfg.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if *clientCA != "" {
			pem, err := os.ReadFile(*clientCA)
			if err != nil {
				return config{}, fmt.Errorf("-tls-client-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return config{}, fmt.Errorf("-tls-client-ca: no certificate in %s", *clientCA)
			}
			cfg.tls.ClientCAs, cfg.tls.ClientAuth = pool, tls.RequireAndVerifyClientCert
		}
	}
	for _, e := range splitList(*saslUsers) {
		parts := strings.SplitN(e, ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			return config{}, fmt.Errorf("-sasl %q: want MECHANISM:USER:PASSWORD", e)
		}
		switch parts[0] {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		default:
			return config{}, fmt.Errorf("-sasl %q: mechanism %s is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", e, parts[0])
		}
		cfg.sasl = append(cfg.sasl, [3]string{parts[0], parts[1], parts[2]})
	}
	for _, addr := range splitList(*listen) {
		host, portStr, err := net.SplitHostPort(addr)
		if err != nil {
			return config{}, fmt.Errorf("-listen %q: %w", addr, err)
		}
		if host != "" && host != "127.0.0.1" && host != "localhost" {
			return config{}, fmt.Errorf("-listen %q: kfake listens on 127.0.0.1 only", addr)
		}
		port, err := strconv.Atoi(portStr)
		if err != nil || port <= 0 || port > 65535 {
			return config{}, fmt.Errorf("-listen %q: port must be 1..65535", addr)
		}
		cfg.ports = append(cfg.ports, port)
	}
	if len(cfg.ports) == 0 {
		return config{}, errors.New("-listen: need at least one host:port")
	}
	cfg.topics = splitList(*topics)
	if len(cfg.topics) > 0 && (cfg.partitions <= 0 || cfg.partitions > 1<<20) {
		return config{}, fmt.Errorf("-partitions %d: must be 1..%d", cfg.partitions, 1<<20)
	}
	return cfg, nil
}

func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func run(args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))

	opts := []kfake.Opt{kfake.Ports(cfg.ports...)}
	if len(cfg.topics) > 0 {
		opts = append(opts, kfake.SeedTopics(int32(cfg.partitions), cfg.topics...))
	}
	if cfg.dataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.dataDir))
	}
	if cfg.tls != nil {
		opts = append(opts, kfake.TLS(cfg.tls))
	}
	if len(cfg.sasl) > 0 {
		opts = append(opts, kfake.EnableSASL())
		for _, u := range cfg.sasl {
			opts = append(opts, kfake.Superuser(u[0], u[1], u[2]))
		}
	}
	if cfg.verbose {
		opts = append(opts, kfake.WithLogger(slogLogger{logger}))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("start broker on ports %v: %w", cfg.ports, err)
	}
	logger.Info("broker ready",
		"addr", strings.Join(cluster.ListenAddrs(), ","),
		"tls", cfg.tls != nil, "sasl_users", len(cfg.sasl),
		"topics", cfg.topics,
		"partitions", cfg.partitions,
		"data_dir", cfg.dataDir)
	if cfg.registry != "" {
		reg, err := registrytest.Listen(cfg.registry)
		if err != nil {
			cluster.Close()
			return fmt.Errorf("-registry: %w", err)
		}
		defer reg.Close()
		logger.Info("schema registry ready", "url", reg.URL())
	}

	<-ctx.Done()
	logger.Info("shutting down")
	// With -data-dir, Close writes the broker's state to disk.
	cluster.Close()
	logger.Info("broker closed")
	return nil
}

// slogLogger passes kfake's log lines to slog.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	var lv slog.Level
	switch level {
	case kfake.LogLevelError:
		lv = slog.LevelError
	case kfake.LogLevelWarn:
		lv = slog.LevelWarn
	case kfake.LogLevelInfo:
		lv = slog.LevelInfo
	default:
		lv = slog.LevelDebug
	}
	s.l.Log(context.Background(), lv, fmt.Sprintf(format, args...), "component", "kfake")
}
