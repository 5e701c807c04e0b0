package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/pipeline"
)

// newRegistry returns the registry every component registers on, with the
// Go runtime and process collectors and the pipeline's info metric.
func newRegistry(cfg *config.Config) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "etl_pipeline_info",
		Help: "Always 1; labels name the pipeline and the etl version.",
		ConstLabels: prometheus.Labels{"pipeline": cfg.Pipeline.Name, "version": version, "go_version": runtime.Version(),
			"decode_format": cfg.Decode.Format, "table": cfg.Sink.ClickHouse.Table},
	})
	info.Set(1)
	reg.MustRegister(info)
	return reg
}

type httpServer struct{ srv *http.Server }

func (s *httpServer) Close() {
	if s.srv != nil {
		_ = s.srv.Close()
	}
}

// startHTTP serves /metrics, /healthz, /readyz and, when enabled,
// /debug/pprof on listen ("off" disables it).
func startHTTP(listen string, withPprof bool, reg *prometheus.Registry, p *pipeline.Pipeline, log *slog.Logger) (*httpServer, error) {
	if listen == "" || listen == "off" {
		return &httpServer{}, nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// /healthz: the poll loop is alive and no partition is stalled
	// (checkpoint.stalled_fail_after); 503 with the reason otherwise.
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		ok, msg := p.Health()
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, msg)
	})
	// /readyz: an assignment was received from the consumer group and
	// ClickHouse answers; 503 with what is missing otherwise.
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ok, msg := p.Ready(r.Context())
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, msg)
	})
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("metrics.listen %s: %w", listen, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	log.Info("serving metrics", "addr", ln.Addr().String())
	return &httpServer{srv: srv}, nil
}
