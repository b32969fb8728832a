# otelcol-gym: see README.md.
#
#   make build     the otelcol-gym collector (ocb) in _build/, only when a source changed
#   make run       build, start it on config/otelcol-gym.yaml, feed it testdata/sample-run.jsonl
#   make test      go test -race ./... (unit, golden and end-to-end tests)
#   make generate  go generate ./... and mdatagen for every component
#   make bench     benchmarks
#   make lint      golangci-lint (v2.15.0, from tools/go.mod)
#   make clean     remove _build/

GO       ?= go
TOOLS    := $(GO) tool -modfile=$(CURDIR)/tools/go.mod
BUILD    := _build
BIN      := $(BUILD)/otelcol-gym
GYMEVENTS:= $(BUILD)/gymevents
CONFIG   ?= config/otelcol-gym.yaml
# Keep these in step with $(CONFIG).
HEALTH_URL  ?= http://127.0.0.1:13133/
GYM_URL     ?= http://127.0.0.1:4390
METRICS_URL ?= http://127.0.0.1:9464/metrics
SAMPLE      ?= testdata/sample-run.jsonl
# The end-to-end tests build the collector once per run in TestMain (outside go test's
# -timeout); a cold `go test -race` of the whole module still takes minutes on 2 cores.
TEST_TIMEOUT ?= 25m

# Everything that goes into the collector binary: the root module's non-test Go files and
# embedded files, its go.mod/go.sum, the ocb manifest and the ocb version.
COLLECTOR_SRCS := $(shell find receiver processor internal -type f \
		-not -name '*_test.go' -not -path '*/testdata/*' 2>/dev/null) \
	$(wildcard metadata.yaml) go.mod go.sum builder-config.yaml tools/go.mod tools/go.sum
GYMEVENTS_SRCS := $(shell find cmd/gymevents -name '*.go' -not -name '*_test.go') go.mod go.sum

.PHONY: all build run test bench lint generate clean gymevents

all: build

build: $(BIN)

# ocb regenerates $(BUILD)/ and compiles; go's build cache makes an unchanged rebuild fast,
# the touch makes make see the binary as new even when go did not rewrite it.
$(BIN): $(COLLECTOR_SRCS)
	$(TOOLS) builder --config builder-config.yaml
	@touch $@

gymevents: $(GYMEVENTS)

$(GYMEVENTS): $(GYMEVENTS_SRCS)
	@mkdir -p $(BUILD)
	$(GO) build -o $@ ./cmd/gymevents

# Starts the collector in the background of this shell, waits for its health check, sends the
# sample run, then waits on the collector. Ctrl-C (or SIGTERM) stops the collector gracefully.
run: $(BIN) $(GYMEVENTS)
	@set -u; \
	./$(BIN) --config $(CONFIG) & pid=$$!; \
	stop() { trap - INT TERM; echo; echo "stopping otelcol-gym ($$pid)"; kill -TERM $$pid 2>/dev/null; wait $$pid; exit 0; }; \
	trap stop INT TERM; \
	if ! ./$(GYMEVENTS) wait $(HEALTH_URL) --timeout 60s --pid $$pid; then kill -TERM $$pid 2>/dev/null; wait $$pid; exit 1; fi; \
	./$(GYMEVENTS) send $(SAMPLE) --endpoint $(GYM_URL) --quiet || true; \
	echo; \
	echo "otelcol-gym is running (pid $$pid) with $(CONFIG)."; \
	echo "  Gym metrics (Prometheus):  $(METRICS_URL)   e.g. curl -s $(METRICS_URL) | grep ^gym_"; \
	echo "  send more events:          ./$(GYMEVENTS) send FILE --endpoint $(GYM_URL)"; \
	echo "  health:                    $(HEALTH_URL)"; \
	echo "Ctrl-C to stop."; \
	wait $$pid

test:
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

# The e2e package has no benchmarks (and would build the collector): left out.
bench:
	$(GO) test -run '^$$' -bench . -benchmem $$($(GO) list ./... | grep -v /e2e$$)

lint:
	$(TOOLS) golangci-lint run ./...

generate:
	$(GO) generate ./...
	@for m in $$(find receiver processor -name metadata.yaml -not -path '*/testdata/*' 2>/dev/null); do \
		d=$$(dirname $$m); \
		echo "mdatagen $$m"; \
		(cd $$d && $(TOOLS) mdatagen metadata.yaml) || exit 1; \
	done

clean:
	rm -rf $(BUILD)
