package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/etl-project/etl/config"
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
			"decode_format": string(cfg.Decode.Format), "table": cfg.Sink.ClickHouse.Table},
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

// prober answers /healthz and /readyz: the pipeline once it is built, the
// startup (startup.go) until then.
type prober interface {
	Health() (bool, string)
	Ready(ctx context.Context) (bool, string)
}

// metricsView serves /metrics: the base registry (runtime, process and
// info metrics) and the registry of the pipeline, or of the startup until
// the pipeline is built. Each attempt to build the pipeline registers on a
// registry of its own, which is shown only once the attempt succeeded.
type metricsView struct {
	base *prometheus.Registry
	h    atomic.Pointer[http.Handler]
}

func newMetricsView(base *prometheus.Registry, g prometheus.Gatherer) *metricsView {
	v := &metricsView{base: base}
	v.show(g)
	return v
}

// show serves the base registry's metrics and g's from now on.
func (v *metricsView) show(g prometheus.Gatherer) {
	h := promhttp.HandlerFor(prometheus.Gatherers{v.base, g}, promhttp.HandlerOpts{Registry: v.base})
	v.h.Store(&h)
}

func (v *metricsView) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*v.h.Load()).ServeHTTP(w, r)
}

// startHTTP serves /metrics, /healthz, /readyz and, when enabled,
// /debug/pprof on listen ("off" disables it).
func startHTTP(listen string, withPprof bool, metrics http.Handler, p prober, log *slog.Logger) (*httpServer, error) {
	if listen == "" || listen == "off" {
		return &httpServer{}, nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics)
	// /healthz: the poll loop is alive and no partition is stalled
	// (checkpoint.stalled_fail_after); 503 with the reason otherwise. 200
	// while the startup waits for ClickHouse: restarting would not help.
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		ok, msg := p.Health()
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, msg)
	})
	// /readyz: an assignment was received from the consumer group and
	// ClickHouse answers; 503 with what is missing otherwise (while the
	// startup waits for ClickHouse: its last error).
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
