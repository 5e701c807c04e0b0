# etl: build, test, demo and benchmark.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
BIN       := bin
DEMO_DIR  ?= .demo

.PHONY: all build test test-short vet fmt check-deploy sim fuzz demo demo-stop bench clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/etl ./cmd/etl
	$(GO) build -o $(BIN)/devbroker ./cmd/devbroker

# Everything: formatting, vet, the deployment files' checks, unit tests and
# the integration tests against a real ClickHouse and a real broker, with
# the race detector.
test: vet check-deploy sim
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) test -race -count=1 -timeout 25m ./...

# The deterministic simulation of the flow-control core (pipeline/sim_test.go):
# SEEDS seeds from 1, each replayable alone with
# go test ./pipeline -run '^TestSim$$' -sim.seed=N -v. Its last line is
# "sim: N seeds, S steps, V violations".
SEEDS ?= 1000
sim:
	$(GO) test -c -o $(BIN)/pipeline.test ./pipeline
	$(BIN)/pipeline.test -test.run '^TestSim$$' -test.count=1 -sim.seeds=$(SEEDS) -sim.summary

# Go native fuzzing of the JSON and Avro decoders against a real ClickHouse
# (decode/fuzz_server_test.go): whatever a decoder accepts must be accepted
# by the server's insert. FUZZTIME (Go duration in s, m or h) is split
# evenly between the two targets; one fuzz worker each, one server each.
# Go 1.26's fuzzing coordinator can end a run with a bare "context deadline
# exceeded" when a worker is busy at the deadline (go.dev/issue/75804,
# fixed in Go 1.27): a failure that wrote no failing input under
# decode/testdata/fuzz is reported as that and does not fail the target.
FUZZTIME ?= 10m
fuzz:
	@half=$$(echo "$(FUZZTIME)" | awk '{ u = substr($$0, length($$0)); v = substr($$0, 1, length($$0) - 1); \
	  if (u == "h") v *= 3600; else if (u == "m") v *= 60; else if (u != "s") { print "bad"; exit } \
	  printf "%ds", v / 2 }'); \
	  if [ "$$half" = "bad" ]; then echo "FUZZTIME=$(FUZZTIME): want a duration in s, m or h"; exit 2; fi; \
	  log=$$(mktemp); rc=$$(mktemp); trap 'rm -f "$$log" "$$rc"' EXIT; \
	  for target in FuzzServerJSON FuzzServerAvro; do \
	    echo "fuzz: $$target for $$half"; \
	    before=$$(ls decode/testdata/fuzz/$$target 2>/dev/null | wc -l); \
	    { $(GO) test ./decode -run '^$$' -fuzz "^$$target\$$" -fuzztime $$half -parallel 1 2>&1; echo $$? > "$$rc"; } | tee "$$log"; \
	    if [ "$$(cat "$$rc")" = 0 ]; then continue; fi; \
	    after=$$(ls decode/testdata/fuzz/$$target 2>/dev/null | wc -l); \
	    if [ "$$after" = "$$before" ] && grep -q '^    context deadline exceeded$$' "$$log" && \
	      ! grep -q 'Failing input\|panic:\|server refused' "$$log"; then \
	      echo "fuzz: $$target: the coordinator's deadline race (go.dev/issue/75804), no failing input: not a finding"; \
	      continue; \
	    fi; \
	    exit 1; \
	  done

test-short: vet
	$(GO) test -count=1 -short ./...

vet:
	$(GO) vet ./...
	$(GO) vet -tags etltest ./cmd/etl

# Alert rules (promtool), the Grafana dashboard and the Kubernetes
# manifests, offline.
check-deploy:
	scripts/check-deploy.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

# Starts a local ClickHouse and broker, generates records, runs the
# pipeline with a live progress line and shows the row count.
demo: build
	DEMO_DIR=$(DEMO_DIR) scripts/demo.sh

demo-stop:
	DEMO_DIR=$(DEMO_DIR) scripts/demo.sh stop

# The end-to-end benchmark: generated JSON through the pipeline into the
# local ClickHouse; prints rows/s, CPU seconds per million rows, peak RSS.
bench: build
	scripts/bench.sh

clean:
	rm -rf $(BIN) $(DEMO_DIR)
