# otelcol-gym: see README.md.
#
#   make build     the otelcol-gym collector (ocb) in _build/, only when a source changed
#   make run       build, start it on config/otelcol-gym.yaml, feed it testdata/sample-run.jsonl
#   make test      every suite of TEST_SUITES: go test -race ./... (unit, golden, end-to-end), ...
#   make generate  go generate ./... and mdatagen for every component and internal/bound
#   make bench     the Go benchmarks, the end-to-end benchmark of the real binary, the gateway's (bench-gateway), the Python emitter's (bench-python),
#                  then the four paths against their references in one table, added to docs/performance.md's History (BENCH_COLD=1: cold make run too)
#   make bench-compare BASE=rev  the engine's per-core benchmarks of rev and of the tree, side by side
#   make bench-peer  otelcol-gym against a stock collector (ocb v0.160.0) on the same stream
#   make bench-otlp-peer  gymattrs against contrib's transform (OTTL; ocb v0.161.0) on the same Gym SDK OTLP
#   make soak      an accelerated day of a node agent: process churn, rotations, restarts; bounds and totals checked (SOAK_DURATION=5m)
#   make soak-load the real binary under steady load, resources sampled (DURATION=10m RATE=100000)
#   make reliability  crashes and restarts of the real binary, and the cost of durability
#   make bench-memory  the default pipeline's memory per resource, per series, after churn, under gzip bombs
#   make lint      golangci-lint (v2.15.0, from tools/go.mod)
#   make jaeger    Jaeger v1.75.0 (tools/jaeger/go.mod) in _build/jaeger: the e2e tests' trace backend, deploy/jaeger/jaeger.yaml's
#   make image     the container image (Dockerfile, FROM scratch: binary, default configuration, CA roots, OCI labels, SBOM) with buildah or podman
#   make stack     the local stack (deploy/compose: collector, Prometheus, Grafana) up, the sample fed in
#   make dist      reproducible release archives (linux and darwin, amd64 and arm64), SHA256SUMS, SBOMs in _build/dist/
#   make packages  make dist, then reproducible .deb and .rpm (systemd unit) beside the archives
#   make clean     remove _build/

GO       ?= go
TOOLS    := $(GO) tool -modfile=$(CURDIR)/tools/go.mod
BUILD    := _build
BIN      := $(BUILD)/otelcol-gym
GYMEVENTS:= $(BUILD)/gymevents
GYMRUN   := $(BUILD)/gymrun
CONFIG   ?= config/otelcol-gym.yaml
# Keep these in step with $(CONFIG).
HEALTH_URL  ?= http://127.0.0.1:13133/
GYM_URL     ?= http://127.0.0.1:4390
METRICS_URL ?= http://127.0.0.1:9464/metrics
LIVE_URL    ?= http://127.0.0.1:8890/
SAMPLE      ?= testdata/sample-run.jsonl
# `make run` adds a debug exporter (one log line per batch) to the pipeline of $(CONFIG), which
# has none; RUN_CONFIG= runs $(CONFIG) alone.
RUN_CONFIG  ?= --config 'yaml:exporters::debug::verbosity: basic' \
	--config 'yaml:service::pipelines::metrics::exporters: [prometheus, gymlive, debug]'
# The end-to-end tests build the collector once per run in TestMain (outside go test's
# -timeout); a cold `go test -race` of the whole module still takes minutes on 2 cores.
TEST_TIMEOUT ?= 25m

# Everything that goes into the collector binary: the root module's non-test Go files and
# embedded files, its go.mod/go.sum, the ocb manifest and the ocb version.
COLLECTOR_SRCS := $(shell find receiver processor exporter extension connector internal -type f \
		-not -name '*_test.go' -not -path '*/testdata/*' 2>/dev/null) \
	$(wildcard metadata.yaml) go.mod go.sum builder-config.yaml tools/go.mod tools/go.sum
GYMEVENTS_SRCS := $(shell find cmd/gymevents internal/gymgen -name '*.go' -not -name '*_test.go') go.mod go.sum
# gymrun reads run files with the engine's own code: every non-test Go file of internal/.
GYMRUN_SRCS := $(shell find cmd/gymrun internal -name '*.go' -not -name '*_test.go') go.mod go.sum

# The stock collector of `make bench-peer`, built by its own ocb (bench/peer/tools/go.mod).
PEER_BIN   := $(BUILD)/peer/otelcol-peer
PEER_TOOLS := $(GO) tool -modfile=$(CURDIR)/bench/peer/tools/go.mod
# The stock collector of `make bench-otlp-peer` (otlp, transform; v0.161.0, the newest release
# whose transform processor the proxy serves whole), by its own ocb (bench/otlppeer/tools/go.mod).
OTLPPEER_BIN   := $(BUILD)/otlppeer/otelcol-otlppeer
OTLPPEER_TOOLS := $(GO) tool -modfile=$(CURDIR)/bench/otlppeer/tools/go.mod
# Extra flags of the harnesses (go run ./bench/e2e -h, ./bench/peer -h, ./bench/otlppeer -h,
# ./bench/soak -h).
BENCH_FLAGS ?=
PEER_FLAGS  ?=
OTLPPEER_FLAGS ?= --rounds 3
SOAK_FLAGS  ?=
GATEWAY_FLAGS ?= --agents 8,64 --requests 120 --runs 3 --gomaxprocs 1
DURATION    ?= 10m
RATE        ?= 100000

.PHONY: all build run test test-go test-python test-prometheus bench-python bench bench-peer bench-otlp-peer soak reliability lint generate clean gymevents gymrun
.PHONY: jaeger
.PHONY: bench-memory bench-compare bench-gateway soak-load
.PHONY: test-deploy image test-image dist test-dist test-run-dist stack stack-down
.PHONY: packages test-packages

all: build

# A build cut short (a signal, a full disk) must not leave a target make then takes as up to date
# (a truncated _build/otelcol-gym): make deletes the target of a recipe that failed.
.DELETE_ON_ERROR:

build: $(BIN)

# ocb (the version tools/go.mod pins), built once into $(BUILD)/ the way ocb compiles a
# distribution: -trimpath, CGO_ENABLED=0. Go's build cache keys every package, the standard
# library's too, by those flags: built alike, ocb, the collector and gymevents share what they
# compile instead of compiling the standard library up to three times on a cold cache.
OCB            := $(BUILD)/ocb
CACHE_LIKE_OCB := CGO_ENABLED=0 $(GO) build -trimpath
$(OCB): tools/go.mod tools/go.sum
	@mkdir -p $(@D)
	$(CACHE_LIKE_OCB) -modfile=$(CURDIR)/tools/go.mod -o $@ go.opentelemetry.io/collector/cmd/builder

# ocb regenerates $(BUILD)/ and compiles; go's build cache makes an unchanged rebuild fast,
# the touch makes make see the binary as new even when go did not rewrite it.
$(BIN): $(COLLECTOR_SRCS) $(OCB)
	$(OCB) --config builder-config.yaml
	@touch $@

# The distribution `make run` builds: builder-config.yaml without its deploy-only components
# (tools/run-config.sh), so that a first `make run` compiles half as much. RUN_BIN=$(BIN) runs
# the whole distribution instead (for a CONFIG that uses a deploy-only component).
RUN_DIST_BIN := $(BUILD)/run/otelcol-gym
RUN_BIN      ?= $(RUN_DIST_BIN)
$(RUN_DIST_BIN): $(COLLECTOR_SRCS) tools/run-config.sh $(OCB)
	@mkdir -p $(@D)
	bash tools/run-config.sh >$(BUILD)/run-builder-config.yaml
	$(OCB) --config $(BUILD)/run-builder-config.yaml
	@touch $@

# Jaeger (v1.75.0), the trace backend of the e2e tests (e2e/harness/jaeger.go) and of
# deploy/jaeger/jaeger.yaml, from a module of its own (tools/jaeger/go.mod): its dependencies
# stay out of the collector's go.mod. A cold build takes minutes on 2 cores; go's build cache
# makes the next one fast, the touch makes make see the binary as new.
JAEGER     := $(BUILD)/jaeger
JAEGER_PKG := github.com/jaegertracing/jaeger/cmd/jaeger
jaeger: $(JAEGER)

$(JAEGER): tools/jaeger/go.mod tools/jaeger/go.sum
	@mkdir -p $(BUILD)
	$(GO) build -modfile=tools/jaeger/go.mod -o $@ $(JAEGER_PKG)
	@touch $@

gymevents: $(GYMEVENTS)

# After ocb (order only): built at once, the two would compile the same standard packages side by
# side; after it, gymevents compiles the rest of what it needs (net/http, crypto/tls) while
# `make run`'s ocb mostly waits on module downloads (its go mod tidy), and the collector then
# finds them in the build cache.
$(GYMEVENTS): $(GYMEVENTS_SRCS) | $(OCB)
	@mkdir -p $(BUILD)
	$(CACHE_LIKE_OCB) -o $@ ./cmd/gymevents

gymrun: $(GYMRUN)

$(GYMRUN): $(GYMRUN_SRCS)
	@mkdir -p $(BUILD)
	$(CACHE_LIKE_OCB) -o $@ ./cmd/gymrun

# The default configuration keeps its checkpoint, Gym's spans and logs in
# $OTELCOL_GYM_STORAGE_DIR: for `make run`, this repository's _build/storage, an absolute path.
STORAGE_DIR ?= $(CURDIR)/$(BUILD)/storage

# Builds the collector and gymevents side by side (-j2: see $(GYMEVENTS)), then starts the
# collector in the background of this shell, waits for its health check, sends the sample run,
# then waits on the collector. Ctrl-C (or SIGTERM) stops the collector gracefully.
run:
	@$(MAKE) --no-print-directory -j2 $(RUN_BIN) $(GYMEVENTS)
	@set -u; \
	OTELCOL_GYM_STORAGE_DIR=$(STORAGE_DIR) ./$(RUN_BIN) --config $(CONFIG) $(RUN_CONFIG) & pid=$$!; \
	stop() { trap - INT TERM; echo; echo "stopping otelcol-gym ($$pid)"; kill -TERM $$pid 2>/dev/null; wait $$pid; exit 0; }; \
	trap stop INT TERM; \
	if ! ./$(GYMEVENTS) wait $(HEALTH_URL) --timeout 60s --pid $$pid; then kill -TERM $$pid 2>/dev/null; wait $$pid; exit 1; fi; \
	./$(GYMEVENTS) send $(SAMPLE) --endpoint $(GYM_URL) --quiet || true; \
	echo; \
	echo "otelcol-gym is running (pid $$pid) with $(CONFIG)."; \
	echo "  Gym metrics (Prometheus):  $(METRICS_URL)   e.g. curl -s $(METRICS_URL) | grep ^gym_"; \
	echo "  live page:                 $(LIVE_URL)   (docs/live.md; JSON: $(LIVE_URL)api/v1/runs)"; \
	echo "  in a terminal:             make gymrun && _build/gymrun top   (docs/gymrun.md)"; \
	echo "  OTLP from Gym's SDK:       grpc 127.0.0.1:4317, http http://127.0.0.1:4318 (docs/gym.md)"; \
	echo "  send more events:          ./$(GYMEVENTS) send FILE --endpoint $(GYM_URL)"; \
	echo "  health:                    $(HEALTH_URL)"; \
	echo "  Gym's spans and logs:      $(STORAGE_DIR)/otel-traces.jsonl, $(STORAGE_DIR)/otel-logs.jsonl"; \
	echo "Ctrl-C to stop."; \
	wait $$pid

# `make test` runs every suite below. A new suite is a target of its own, added to TEST_SUITES on
# a line of its own.
TEST_SUITES := test-go
TEST_SUITES += test-python
TEST_SUITES += test-prometheus
TEST_SUITES += test-deploy
TEST_SUITES += test-image
TEST_SUITES += test-dist
TEST_SUITES += test-run-dist

test: $(TEST_SUITES)

# The collector and Jaeger are built first, outside go test's -timeout: a cold ocb build of
# every component takes many minutes on 2 cores, Jaeger's a few. The e2e package's own
# `make build` and `make jaeger` are then no-ops.
test-go: $(BIN) $(JAEGER)
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

# The Python emitter (python/): its unit tests with the standard library's unittest; the
# end-to-end test through the real collector is the Go e2e package's (TestPythonEmitter).
PYTHON ?= python3
test-python:
	cd python && $(PYTHON) -m unittest discover -s tests -v

# The emitter's caller-side cost per call (timeit) and its thread's lines/s to a Unix socket.
bench-python:
	cd python && $(PYTHON) bench/bench_emitter.py

# The Prometheus rules of deploy/prometheus: syntax (promtool check rules, check config) and
# the unit tests of every alert (gym.rules.test.yaml). promtool ships with Debian's prometheus.
# The Grafana dashboards are generated by deploy/grafana/generate.py: stale JSON fails here.
PROMTOOL ?= promtool
test-prometheus:
	@command -v $(PROMTOOL) >/dev/null || { echo "test-prometheus: $(PROMTOOL) not found: apt-get install prometheus (.ci/run does it)"; exit 1; }
	$(PROMTOOL) check rules deploy/prometheus/gym.rules.yaml
	cd deploy/prometheus && $(PROMTOOL) check config prometheus.yml
	cd deploy/prometheus && $(PROMTOOL) test rules gym.rules.test.yaml
	python3 deploy/grafana/generate.py --check

# The deployment recipes (deploy/, a module of its own): the kustomize base rendered and decoded
# into the Kubernetes types, the Helm values, the collector configs inside them validated by
# the binary. The Slurm launcher and the topology run in the e2e package (test-go).
test-deploy: $(BIN)
	bash -n deploy/slurm/otelcol-gym-slurm
	cd deploy && OTELCOL_GYM_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 ./...

# The container image: the binary ocb builds (static: ocb compiles with CGO_ENABLED=0; the
# image check verifies it), its default configuration, LICENSE, NOTICE and its SBOM, in a build
# context of their own (tools/image-context.sh), built FROM scratch by buildah or podman with
# the OCI labels (version, commit, licence) and SOURCE_DATE_EPOCH as its time.
# One version for everything released: ocb's dist.version in builder-config.yaml names the
# binary's version, the archives, the image tag, and the image the manifests and Helm values
# run (the deploy tests check they agree).
VERSION    := $(shell sed -n 's/^  version: *//p' builder-config.yaml)
IMAGE_REPO ?= ghcr.io/gym-telemetry/otelcol-gym
IMAGE      ?= $(IMAGE_REPO):$(VERSION)
IMAGE_CTX  := $(BUILD)/image
# Read once per make run: the context, the labels and the image's time agree.
IMAGE_EPOCH    := $(or $(SOURCE_DATE_EPOCH),$(shell git log -1 --format=%ct 2>/dev/null),0)
IMAGE_REVISION := $(or $(shell git rev-parse HEAD 2>/dev/null),unknown)
IMAGE_ARGS  = --timestamp $(IMAGE_EPOCH) --build-arg VERSION=$(VERSION) \
	--build-arg REVISION=$(IMAGE_REVISION) \
	--build-arg CREATED=$$(date -u -d @$(IMAGE_EPOCH) +%Y-%m-%dT%H:%M:%SZ) \
	-t $(IMAGE) -f Dockerfile $(IMAGE_CTX)

image: $(BIN)
	SOURCE_DATE_EPOCH=$(IMAGE_EPOCH) VERSION=$(VERSION) GO=$(GO) bash tools/image-context.sh $(BIN) $(IMAGE_CTX)
	@if command -v buildah >/dev/null 2>&1; then set -x; buildah build --layers=false $(IMAGE_ARGS); \
	elif command -v podman >/dev/null 2>&1; then set -x; podman build $(IMAGE_ARGS); \
	else echo "make image: needs buildah or podman (apt-get install buildah)"; exit 1; fi

# Checks the image: its config (user, entry point, default configuration, labels), its root
# (the one static binary, the configuration, LICENSE, NOTICE, SBOM, no shell, no CA bundle),
# the roots the binary embeds, and the binary itself, run from the mounted root: it lists its
# components and validates deploy/; then it runs the image as a container (buildah run with
# runc): the default configuration as the image's user, the collector serving what it is sent,
# and its TLS verification against a private root and the embedded public ones.
# Skipped where buildah is missing.
test-image:
	@if ! command -v buildah >/dev/null 2>&1; then echo "test-image: skipped (no buildah)"; exit 0; fi; \
	$(MAKE) --no-print-directory image && \
	SOURCE_DATE_EPOCH=$(IMAGE_EPOCH) VERSION=$(VERSION) bash deploy/image-check.sh $(IMAGE)

# The local stack of deploy/compose (docker compose, else podman compose): the collector on its
# default configuration, Prometheus with the rules, Grafana with the dashboards at
# http://127.0.0.1:3000; then the sample run is sent to it. STACK_IMAGE= another image (for
# example one `make image` built, with podman).
COMPOSE     ?= $(shell if docker compose version >/dev/null 2>&1; then echo docker compose; elif command -v podman >/dev/null 2>&1; then echo podman compose; fi)
STACK_IMAGE ?= $(IMAGE)
stack: $(GYMEVENTS)
	@[ -n "$(COMPOSE)" ] || { echo "make stack: needs docker compose or podman compose"; exit 1; }
	OTELCOL_GYM_IMAGE=$(STACK_IMAGE) $(COMPOSE) -f deploy/compose/compose.yaml up -d
	./$(GYMEVENTS) wait $(HEALTH_URL) --timeout 120s
	./$(GYMEVENTS) send $(SAMPLE) --endpoint $(GYM_URL) --quiet
	@echo "Grafana: http://127.0.0.1:3000 (folder NeMo Gym)   Prometheus: http://127.0.0.1:9090   stop: make stack-down"

stack-down:
	$(COMPOSE) -f deploy/compose/compose.yaml down

# Release archives (tools/dist.sh): otelcol-gym for linux/amd64, linux/arm64, darwin/amd64 and
# darwin/arm64 built with -trimpath, no build id and SOURCE_DATE_EPOCH (the last commit's time)
# for every date, with the default configuration and the `gym eval submit` drop-in; SHA256SUMS;
# a CycloneDX SBOM each.
DIST ?= $(BUILD)/dist
dist:
	VERSION=$(VERSION) GO=$(GO) bash tools/dist.sh $(DIST)

# The .deb and .rpm of linux/amd64 and linux/arm64 (tools/packages.sh; nfpm from
# tools/nfpm/go.mod; deploy/packages/): the binaries of the archives of `make dist`, the default
# configuration as the conffile /etc/otelcol-gym/config.yaml, a systemd unit; written beside
# the archives and added to SHA256SUMS.
packages: dist
	VERSION=$(VERSION) GO=$(GO) bash tools/packages.sh $(DIST)

# The packages of $(DIST) checked (tools/packages-check.sh): the rpm's and deb's metadata,
# files, conffiles and scripts; the .deb installed in a clean Debian root (debootstrap, cached
# in _build/pkgtest/), its unit's command line run there. `make test-dist` runs the same check.
test-packages: packages $(GYMEVENTS)
	GYMEVENTS=$(GYMEVENTS) bash tools/packages-check.sh $(DIST) $(VERSION)

# The archives and packages are reproducible: two builds in a row give the same bytes
# (SHA256SUMS equal); the release workflow (.github/workflows/release.yml) passes actionlint
# (v1.7.12, a module of its own: tools/actionlint/go.mod).
# SOURCE_DATE_EPOCH is read once, so that a commit between the two builds changes neither.
test-dist: $(GYMEVENTS)
	epoch=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct)}; \
	SOURCE_DATE_EPOCH=$$epoch VERSION=$(VERSION) GO=$(GO) bash tools/dist.sh $(BUILD)/dist-check-1 && \
	SOURCE_DATE_EPOCH=$$epoch VERSION=$(VERSION) GO=$(GO) bash tools/packages.sh $(BUILD)/dist-check-1 && \
	SOURCE_DATE_EPOCH=$$epoch VERSION=$(VERSION) GO=$(GO) bash tools/dist.sh $(BUILD)/dist-check-2 && \
	SOURCE_DATE_EPOCH=$$epoch VERSION=$(VERSION) GO=$(GO) bash tools/packages.sh $(BUILD)/dist-check-2
	cmp $(BUILD)/dist-check-1/SHA256SUMS $(BUILD)/dist-check-2/SHA256SUMS
	bash tools/dist-check.sh $(BUILD)/dist-check-1 $(VERSION)
	GYMEVENTS=$(GYMEVENTS) bash tools/packages-check.sh $(BUILD)/dist-check-1 $(VERSION)
	$(GO) tool -modfile=$(CURDIR)/tools/actionlint/go.mod actionlint .github/workflows/*.yml

# make run's distribution has every component of the whole one but the deploy-only ones, and
# runs make run's configuration (tools/run-dist-check.sh).
test-run-dist: $(BIN) $(RUN_DIST_BIN)
	bash tools/run-dist-check.sh $(BIN) $(RUN_DIST_BIN) --config $(CONFIG) $(RUN_CONFIG)

# The e2e package has no benchmarks (and would build the collector): left out. Then the
# end-to-end benchmark (bench/e2e): the real binary under `gymevents gen` load, GOMAXPROCS=1
# and 2, memory per series, export cost, a CPU profile (docs/performance.md). Then the four
# paths against their references, each by its own harness (the stock collectors built apart by
# their own ocb): bench-peer, bench-otlp-peer, BenchmarkRealSDK among the Go benchmarks
# (gym_console against json.loads; their output is kept) and, with BENCH_COLD=1, a cold
# `make run` (tools/cold-run.sh: a fresh clone, empty Go caches); and one table of them
# (bench/scorecard), whose row is added to docs/performance.md's History (BENCH_HISTORY= not).
# A path whose harness fails is "not measured" in the table.
SCORECARD     := $(BUILD)/bench/scorecard
BENCH_COLD    ?=
BENCH_HISTORY ?= docs/performance.md
bench: $(BIN) $(GYMEVENTS)
	rm -rf $(SCORECARD) && mkdir -p $(SCORECARD)
	( $(GO) test -run '^$$' -bench . -benchmem $$($(GO) list ./... | grep -v /e2e$$); echo $$? >$(SCORECARD)/go-bench.rc ) \
		| tee $(SCORECARD)/go-bench.txt; exit $$(cat $(SCORECARD)/go-bench.rc)
	$(GO) run ./bench/e2e --collector $(BIN) --gymevents $(GYMEVENTS) $(BENCH_FLAGS)
	$(MAKE) bench-gateway
	$(MAKE) bench-python
	$(MAKE) bench-peer PEER_FLAGS='$(PEER_FLAGS) --scorecard $(SCORECARD)/events.json' || echo "make bench: bench-peer failed"
	$(MAKE) bench-otlp-peer OTLPPEER_FLAGS='$(OTLPPEER_FLAGS) --scorecard $(SCORECARD)/otlp.json' || echo "make bench: bench-otlp-peer failed"
	@if [ -n "$(BENCH_COLD)" ]; then \
		bash tools/cold-run.sh --scorecard $(SCORECARD)/coldrun.json || echo "make bench: tools/cold-run.sh failed"; \
	else echo "cold make run: not measured (BENCH_COLD=1: a fresh clone built with empty Go caches, minutes)"; fi
	$(GO) run ./bench/scorecard --dir $(SCORECARD) --go-bench $(SCORECARD)/go-bench.txt $(if $(BENCH_HISTORY),--history $(BENCH_HISTORY))

# The gateway tier's capacity (docs/performance.md, Capacity): simulated node agents through
# deploy/gateway.yaml into a real Prometheus (apt-get install prometheus), every series and
# sample checked there; GATEWAY_FLAGS=--backend sink for the gateway alone.
bench-gateway: $(BIN)
	$(GO) run ./bench/gateway --collector $(BIN) $(GATEWAY_FLAGS)

# The engine's per-core benchmarks (events path, run files, gym_console) of BASE and of the
# working tree, side by side in one run: make bench-compare BASE=<revision> [ROUNDS=3].
BASE   ?= HEAD
ROUNDS ?= 3
bench-compare:
	bash bench/compare.sh $(BASE) $(ROUNDS)

# Not in CI: builds a stock collector (filelog, signal_to_metrics, statsd, nop; v0.160.0) and
# runs it and otelcol-gym on the same generated stream.
bench-peer: $(BIN) $(GYMEVENTS) $(PEER_BIN)
	$(GO) run ./bench/peer --collector $(BIN) --peer $(PEER_BIN) --gymevents $(GYMEVENTS) $(PEER_FLAGS)

$(PEER_BIN): bench/peer/builder-config.yaml bench/peer/tools/go.mod bench/peer/tools/go.sum
	@$(PEER_TOOLS) builder --config bench/peer/builder-config.yaml || { \
		echo "bench-peer: the stock collector could not be built with ocb v0.160.0 from the module"; \
		echo "proxy (see above). docs/performance.md, Peer comparison, says which versions it needs."; \
		exit 1; }
	@touch $@

# Not in CI: builds a stock collector (otlp, transform, debug; v0.161.0) and runs it and
# otelcol-gym on the same generated Gym SDK OTLP exports, each without a processor and with
# gymattrs or transform (the OTTL generated from internal/schema): docs/performance.md.
bench-otlp-peer: $(BIN) $(OTLPPEER_BIN)
	$(GO) run ./bench/otlppeer --collector $(BIN) --peer $(OTLPPEER_BIN) $(OTLPPEER_FLAGS)

# ocb creates its output directory but not $(BUILD) above it.
$(OTLPPEER_BIN): bench/otlppeer/builder-config.yaml bench/otlppeer/tools/go.mod bench/otlppeer/tools/go.sum
	@mkdir -p $(BUILD)
	@$(OTLPPEER_TOOLS) builder --config bench/otlppeer/builder-config.yaml || { \
		echo "bench-otlp-peer: the stock collector could not be built with ocb v0.161.0 from the module"; \
		echo "proxy (see above). docs/performance.md, OTLP through gymattrs against transform, says which versions it needs."; \
		exit 1; }
	@touch $@

# Not in CI: an accelerated day of a node agent (deploy/agent.yaml) through a gateway into
# Prometheus, the e2e test TestSoak, which `go test ./e2e` skips unless GYM_SOAK=1: short-lived
# Gym processes past max_resources, event files rotated, run files growing, restarts (SIGTERM,
# kill -9) every SOAK_RESTART_EVERY (a quarter of the run); RSS, goroutines, descriptors and
# series sampled, their bounds and the exact totals in Prometheus asserted (docs/performance.md,
# Soak). SOAK_TIMEOUT bounds the whole go test run: raise it with a long SOAK_DURATION.
SOAK_DURATION ?= 5m
SOAK_TIMEOUT  ?= 2h
soak: $(BIN)
	GYM_SOAK=1 SOAK_DURATION=$(SOAK_DURATION) OTELCOL_GYM_BIN=$(CURDIR)/$(BIN) \
		$(GO) test ./e2e/ -count 1 -v -timeout $(SOAK_TIMEOUT) -run '^TestSoak$$'

# Not in CI: the real binary under RATE events/s for DURATION; RSS, goroutines and open file
# descriptors sampled; exits 3 when they do not stay flat.
soak-load: $(BIN) $(GYMEVENTS)
	$(GO) run ./bench/soak --collector $(BIN) --gymevents $(GYMEVENTS) --duration $(DURATION) --rate $(RATE) $(SOAK_FLAGS)

# Not in CI (the fast crash and restart tests run in `make test`): those again, and the
# measured cost of checkpoint_before_answer through the real binary (docs/performance.md).
reliability:
	GYM_RELIABILITY=1 $(GO) test ./e2e/ -count 1 -v -run 'TestMeasureCheckpointBeforeAnswer|TestKill9MidFile|TestSIGTERMMidFileExporterDown|TestProcessRestartInOneCollectionPrometheus'

# Not in CI (about 5 minutes): the real binary on config/otelcol-gym.yaml's pipeline; the
# figures of docs/performance.md, "Memory of the default pipeline". MEMORY_FLAGS=--collector-b
# OTHER measures a second build side by side.
MEMORY_FLAGS ?=
bench-memory: $(BIN)
	$(GO) run ./bench/memory --collector $(BIN) --config $(CONFIG) $(MEMORY_FLAGS)

lint:
	$(TOOLS) golangci-lint run ./...

generate:
	$(GO) generate ./...
	@for m in $$(find receiver processor exporter extension connector internal/bound -name metadata.yaml -not -path '*/testdata/*' 2>/dev/null); do \
		d=$$(dirname $$m); \
		echo "mdatagen $$m"; \
		(cd $$d && $(TOOLS) mdatagen metadata.yaml) || exit 1; \
	done
	cd deploy && $(GO) generate ./...

clean:
	rm -rf $(BUILD)
