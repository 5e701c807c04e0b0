# etl: build, test, demo and benchmark.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
BIN       := bin
DEMO_DIR  ?= .demo
# staticcheck at a pinned version, built by go run from the module proxy
# (or the module cache) outside this module's requirements, so that its own
# dependencies never raise the versions this module selects.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build test test-short lint tools vet fmt check-deploy sim mutate bench-smoke fuzz demo demo-stop bench bench-compare bench-scale bench-ab clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/etl ./cmd/etl
	$(GO) build -o $(BIN)/devbroker ./cmd/devbroker
	$(GO) build -o $(BIN)/floorconsumer ./cmd/floorconsumer

# Everything: the hygiene gates (lint), the deployment files' checks, unit
# tests and the integration tests against a real ClickHouse and a real
# broker, with the race detector.
test: lint check-deploy sim bench-smoke
	$(GO) test -race -count=1 -timeout 25m ./...

# Every go test benchmark run once (b.N = 1), so that a benchmark broken by
# a change fails the tests instead of waiting for its next use. The
# benchmarks that insert start their own ClickHouse.
bench-smoke:
	$(GO) test -run '^$$' -bench . -benchtime 1x -count=1 ./...

# The deterministic simulation of the flow-control core (pipeline/sim_test.go):
# SEEDS seeds from 1, each replayable alone with
# go test ./pipeline -run '^TestSim$$' -sim.seed=N -v. Its last line is
# "sim: N seeds, S steps, V violations, R replayed, trace H" (every 10th seed runs twice and must replay: the same steps and trace hash).
SEEDS ?= 1000
sim:
	$(GO) test -c -o $(BIN)/pipeline.test ./pipeline
	$(BIN)/pipeline.test -test.run '^TestSim$$' -test.count=1 -sim.seeds=$(SEEDS) -sim.summary

# The mutation score of the simulation and the fast tests (not part of make
# test): internal/mutate plants each bug of the corpus in test/mutations
# (a file and an exact old text, found exactly once, with its new text)
# one at a time in a scratch copy of the tree, runs the simulation over
# SEEDS seeds (stopping at the first failing batch) and then go test -short
# of the packages it changed, and prints one line per mutation and
# "mutate: N planted, K caught, score P%". MUTATE_ONLY=REGEXP runs the
# mutations whose names match; go run ./internal/mutate -check only checks
# that every mutation still applies.
mutate:
	SEEDS=$(SEEDS) $(GO) run ./internal/mutate

# Go native fuzzing, each target in turn for FUZZTIME (a Go duration in s,
# m or h; default 1m each), one fuzz worker: the expression compiler, the
# JSON decoder (fast path against the general one, flat and through field
# paths into nested objects, and alone), the Avro
# decoder, the Schema Registry framing, the Native encoder (checked against
# ch-go's reader), the config loader, the exactly-once commit metadata, and
# the JSON and Avro decoders against a real ClickHouse (whatever a decoder
# accepts, the server's insert accepts, and for JSON the row stored equals
# the row the server's own JSONEachRow parser stores from the same record,
# or differs as documented; one server each, started by the test). Stops at the first failure; a failing input is written under the
# package's testdata/fuzz/<target>/ and replays with
# go test ./<package> -run <target>/<file>. Every target's checked-in
# corpus there is run by plain go test (make test).
# Go 1.26's fuzzing coordinator can end a run with a bare "context deadline
# exceeded" when a worker is busy at the deadline (go.dev/issue/75804,
# fixed in Go 1.27): a failure that wrote no failing input under the
# target's testdata/fuzz/<target> is reported as that and is not a finding.
FUZZTIME ?= 1m
FUZZ_TARGETS = transform:FuzzExpression decode/json:FuzzFastPath decode/json:FuzzFastPathNested decode/json:FuzzJSON decode/avro:FuzzAvro \
  schemaregistry:FuzzParseFrame sink/clickhouse/native:FuzzNativeEncoder config:FuzzConfig checkpoint:FuzzDecodeBlocks \
  decode/avro:FuzzServerJSON decode/avro:FuzzServerAvro decode/protobuf:FuzzProtobuf
fuzz:
	@if ! echo "$(FUZZTIME)" | grep -Eq '^[0-9]+(\.[0-9]+)?[smh]$$'; then \
	    echo "FUZZTIME=$(FUZZTIME): want a duration in s, m or h"; exit 2; fi; \
	  log=$$(mktemp); rc=$$(mktemp); trap 'rm -f "$$log" "$$rc"' EXIT; \
	  for pt in $(FUZZ_TARGETS); do \
	    pkg=$${pt%%:*}; target=$${pt#*:}; dir=$$pkg/testdata/fuzz/$$target; \
	    echo "fuzz: $$pkg $$target for $(FUZZTIME)"; \
	    before=$$(ls $$dir 2>/dev/null | wc -l); \
	    { $(GO) test ./$$pkg -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) -parallel 1 2>&1; echo $$? > "$$rc"; } | tee "$$log"; \
	    if [ "$$(cat "$$rc")" = 0 ]; then continue; fi; \
	    after=$$(ls $$dir 2>/dev/null | wc -l); \
	    if [ "$$after" = "$$before" ] && grep -q '^    context deadline exceeded$$' "$$log" && \
	      ! grep -q 'Failing input\|panic:\|server refused' "$$log"; then \
	      echo "fuzz: $$target: the coordinator's deadline race (go.dev/issue/75804), no failing input: not a finding"; \
	      continue; \
	    fi; \
	    echo "fuzz: $$pkg $$target failed"; \
	    exit 1; \
	  done

# The pure-logic tests: under -short, internal/testenv skips every test
# that would start ClickHouse or ZooKeeper or build a binary (saying so), so
# this needs no root, no servers and no ClickHouse installed.
test-short: lint
	$(GO) test -count=1 -short ./...

# The hygiene gates, each of which must be clean, for this module and for
# deploy/kubernetes/check (its own module): go.mod and go.sum as go mod tidy
# leaves them, go vet, gofmt, and staticcheck's default checks.
lint: vet
	$(GO) mod tidy -diff
	cd deploy/kubernetes/check && $(GO) mod tidy -diff
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags etltest ./cmd/etl
	cd deploy/kubernetes/check && $(STATICCHECK) ./...

# Downloads and builds the Go tools lint runs (staticcheck), so that a
# missing network shows here rather than in the middle of make test.
tools:
	$(STATICCHECK) -version

vet:
	$(GO) vet ./...
	$(GO) vet -tags etltest ./cmd/etl
	cd deploy/kubernetes/check && $(GO) vet ./...

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

# The same JSON backlog through etl, ClickHouse's Kafka engine and the
# machine's floors (a bare franz-go consumer, clickhouse-client with a
# Native file), on one server: rows/s, CPU per million rows, peak RSS and
# parts for each, and the ratios (scripts/bench-compare.sh;
# docs/BENCHMARKS.md).
bench-compare: build
	scripts/bench-compare.sh

# Many partitions: 1,000 partitions over 10 topics against one topic of 6,
# drained by one member and by three, idle, and a member joining and one
# leaving while records stream in (scripts/bench-scale.sh;
# docs/BENCHMARKS.md).
bench-scale: build
	scripts/bench-scale.sh

# Two etl binaries through make bench in alternating pairs: etl built from
# REF (default HEAD~1) against the work tree's, ROUNDS rounds (default 4);
# the last line gives B's CPU per row over A's (scripts/bench-ab.sh).
bench-ab: build
	scripts/bench-ab.sh

clean:
	rm -rf $(BIN) $(DEMO_DIR)
