# Sluice build and test entry points. CI runs `make test` (through .ci/run).
SHELL := /bin/bash
GO ?= go
GOFLAGS ?= -buildvcs=false
export GOFLAGS

.PHONY: all build test unit alloc integration vet fmt-check tools bench bench-kafka bench-flink bench-pebble bench-network bench-cluster bench-yarn bench-sql bench-formats beam-venv beam-gosdk beam-test beam-conformance beam-conformance-go generate check-generated demo deps

all: build

deps: ## Download Go modules.
	$(GO) mod download

build: deps
	$(GO) build ./...

vet: ## go vet, also of the files only the integration and multi-host build tags compile.
	$(GO) vet ./...
	$(GO) vet -tags 'integration dockercluster' ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

unit: deps ## Unit and in-process tests only (no Java services), with the race detector.
	$(GO) test -race -count=1 ./...

# Every test, including those tagged `integration`, against a real mini
# YARN/HDFS cluster and a real Kafka broker that the script builds (Maven
# Central) and starts once for all packages, and the dashboard's tests in
# Debian's headless Chromium (installed by chromium.sh when missing).
# SLUICE_DASHBOARD_SCREENSHOTS keeps the dashboard's screenshots there.
# The Beam runner's tests drive the real Apache Beam Python SDK from a venv
# that beam-venv.sh builds once (PyPI) under ~/.cache/sluice, and the real
# Beam Go SDK: they `go build` internal/beam/jobservice/testdata/gosdk, a
# module of its own whose dependencies beam-gosdk fetches from the Go module
# proxy (the first build compiles the SDK: a few minutes). Flink's own
# REST classes and CLI (flinkrest.sh, Maven Central) check the REST API.
# Flink's own SQL (flinksql.sh: Flink 2.3's TableEnvironment, Kafka
# connector and json format from Maven Central, one class of ours) runs the
# queries Sluice SQL's outputs are compared with (integration/flinksql).
# The formats' tests start Apicurio Registry (registry.sh, built from Maven
# Central once) on a free port of their own; fastavro (formats-venv.sh, PyPI)
# reads and writes the Avro records of their interoperability test.
integration: deps beam-venv beam-gosdk
	integration/scripts/registry.sh build && integration/scripts/formats-venv.sh >/dev/null && \
	chromium="$$(integration/scripts/chromium.sh)" && \
	flinkcp="$$(integration/scripts/flinkrest.sh | tail -n 1)" && \
	flinksqlcp="$$(integration/scripts/flinksql.sh | tail -n 1)" && \
	SLUICE_CHROMIUM="$$chromium" SLUICE_BEAM_PYTHON="$$(integration/scripts/beam-venv.sh | tail -n 1)" SLUICE_FLINK_CLASSPATH="$$flinkcp" \
	SLUICE_FLINK_SQL_CLASSPATH="$$flinksqlcp" \
	integration/scripts/with-services.sh $(GO) test -race -count=1 -timeout 30m -tags integration ./...

# The multi-host suites: dockerd (installed from Debian and started here when missing), images
# built from a debootstrap base (cached by content hash), the cluster started for the tests and
# stopped after them, the host's iptables and /etc/hosts restored whatever the outcome. Root.
# The cluster is integration/docker/docker-compose.yml, the file users start it with.
# On the plain cluster: the multi-host tests (TestDocker*) and the minicluster's yarn-application
# and yarn-session lifecycle tests (through its conf/READY). Then on the Kerberized variant
# (docker-compose.secure.yml, a KDC host): the Kerberized yarn-application test and the
# Kafka-over-GSSAPI exactly-once job. The client runs on the Docker host, outside the containers.
# SLUICE_DOCKER_CLUSTER_DIR=DIR (SLUICE_DOCKER_SECURE_CLUSTER_DIR=DIR) reuses a running cluster
# (and leaves it running). Both steps build the same test binary (same tags), so the second
# compiles nothing.
DOCKER_PLAIN_TESTS := ^(TestDocker.*|TestApplicationModeExactlyOnce|TestSessionLifecycle)$$
DOCKER_SECURE_TESTS := ^(TestSecureApplicationMode|TestSecureKafkaOverGSSAPI|TestSecureClientConfByIPAddress)$$
integration-docker: deps ## Multi-host tests on a dockerized Hadoop (3 NodeManager + DataNode hosts) and Kafka (3 brokers) cluster, plain and Kerberized.
	integration/scripts/docker-cluster.sh run "$${SLUICE_DOCKER_CLUSTER_DIR:-}" -- \
	$(GO) test -race -count=1 -timeout 30m -tags 'integration dockercluster' -run '$(DOCKER_PLAIN_TESTS)' ./cluster/yarntest/
	integration/scripts/docker-cluster.sh run --secure "$${SLUICE_DOCKER_SECURE_CLUSTER_DIR:-}" -- \
	$(GO) test -race -count=1 -timeout 15m -tags 'integration dockercluster' -run '$(DOCKER_SECURE_TESTS)' ./cluster/yarntest/

beam-venv: ## The Python venv with apache-beam the Beam runner's tests use (first run: a few minutes).
	integration/scripts/beam-venv.sh

beam-gosdk: ## The Beam Go SDK modules of the Go pipelines the Beam runner's tests build (Go module proxy).
	cd internal/beam/jobservice/testdata/gosdk && GOWORK=off $(GO) mod download

beam-test: deps beam-venv beam-gosdk ## Only the Beam runner's tests, Python and Go SDKs included (no Java services).
	SLUICE_BEAM_PYTHON="$$(integration/scripts/beam-venv.sh | tail -n 1)" \
	$(GO) test -race -count=1 -tags integration ./internal/beam/...

beam-conformance: deps beam-venv ## Beam's portable-runner tests from the Python wheel against `sluice beam job-server` (a measurement: prints pytest's summary).
	integration/scripts/beam-conformance.sh

beam-conformance-go: deps ## The Beam Go SDK's validates-runner tests (sdks/go/test/integration: primitives, wordcount, synthetic; Go module proxy) against `sluice beam job-server` (a measurement: prints the summary).
	integration/scripts/beam-conformance-go.sh

# The zero-allocation tests skip under the race detector (it allocates), so
# they get a pass of their own without it.
alloc: deps ## The per-record allocation tests, without the race detector.
	$(GO) test -count=1 -run 'Alloc|DoesNotAllocate' ./...

test: deps fmt-check vet check-generated alloc integration integration-docker ## Everything CI runs.

bench: deps ## Engine benchmarks: records/s and allocations per record.
	$(GO) test -run '^$$' -bench 'Stateless|Rebalance|KeyedWindow' -benchtime 20000000x -count 1 ./bench/ | tee bench.out
	$(GO) test -run '^$$' -bench 'KeyedValueState' -benchtime 60000000x -count 1 ./bench/ | tee -a bench.out

bench-kafka: deps ## Kafka → Kafka pipeline vs a raw franz-go loop on a real broker (started from Maven Central artefacts).
	integration/scripts/kafka.sh build
	$(GO) test -run '^$$' -bench . -benchtime 4000000x -timeout 30m ./bench/kafkabench/ | tee bench-kafka.out

bench-sql: deps ## Nexmark q0 q1 q2 q5 q7 in SQL on Sluice SQL (`sluice sql -f`) and on Flink SQL (integration/flinksql's runner, Maven Central) over the same JSON bids in a real broker started here: records per CPU-second (min/median/max of 3) and peak RSS, and Sluice's DataStream q1 q2 q5 q7; fails only when the engines' results differ; writes bench-sql.json. (The guide query on kfake: go test -bench GuideQuery ./sql/.)
	integration/scripts/kafka.sh build
	set -o pipefail; $(GO) run ./bench/sqlcmp -records 200000 -reps 3 -json bench-sql.json | tee bench-sql.out

bench-formats: deps ## Decode and encode of a 20-field record in each format (JSON, Avro, Protobuf, JSON Schema; registry wire format, in-process registry) vs the library's own call: records/s, allocations per record; a Kafka → Kafka Avro pipeline vs raw bytes on a real broker.
	integration/scripts/kafka.sh build
	$(GO) test -run '^$$' -bench . -benchtime 200000x -count 1 ./formats/internal/formatsbench/ | tee bench-formats.out

bench-cluster: deps ## A standalone cluster as processes: time from kill -9 of a TaskManager to the job RUNNING again.
	$(GO) test -run '^$$' -bench TaskManagerLossToRunning -benchtime 5x -timeout 20m ./cluster/clustertest/ | tee bench-cluster.out

bench-flink: deps ## Sluice vs Apache Flink (local MiniCluster; Flink and Kafka fetched from Maven Central, broker started here) on the same workloads; writes bench-flink.json. COMPARE=old.json prints the change since that run.
	set -o pipefail; $(GO) run ./bench/flinkcmp/cmd/flinkcmp -json bench-flink.json $(if $(COMPARE),-compare $(COMPARE)) | tee bench-flink.out

bench-pebble: deps ## Incremental checkpoint of >= 1 GB of Pebble state after a small change (needs a few GB of disk).
	$(GO) test -run '^$$' -bench PebbleIncrementalCheckpoint -benchtime 3x -timeout 60m ./internal/runtime/state/ | tee bench-pebble.out

bench-network: deps ## Records between two worker endpoints over loopback gRPC (int64 and a small struct), after the same records through the in-process exchange as the baseline: records/s, MB/s, allocations per record.
	$(GO) test -run '^$$' -bench 'InProcessExchange|NetworkExchange' -benchtime 20000000x -count 1 ./internal/runtime/netexchange/ | tee bench-network.out

bench-yarn: deps ## YARN: run --target yarn-application to the job RUNNING vs Hadoop's DistributedShell on the same mini cluster (started here unless SLUICE_HADOOP_CONF_DIR is set); containers requested vs needed.
	set -o pipefail; $(GO) test -tags integration -run '^$$' -bench YarnApplicationToRunning -benchtime 3x -timeout 20m ./cluster/yarntest/ | tee bench-yarn.out

# protoc from Debian (the version the committed code was generated with) and
# the Go plugins at the versions go.mod pins.
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GOBIN := $(shell $(GO) env GOPATH)/bin
tools:
	@command -v protoc >/dev/null || { command -v apt-get >/dev/null && (apt-get update -qq && apt-get install -y -qq protobuf-compiler) || { echo "protoc is missing: install Debian's protobuf-compiler"; exit 1; }; }
	@protoc --version | grep -q ' 3\.21\.' || echo "warning: protoc $$(protoc --version) differs from the 3.21 the code was generated with"
	@test -x $(GOBIN)/protoc-gen-go && $(GOBIN)/protoc-gen-go --version | grep -q $(PROTOC_GEN_GO_VERSION) || $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	@test -x $(GOBIN)/protoc-gen-go-grpc && $(GOBIN)/protoc-gen-go-grpc --version | grep -q $(PROTOC_GEN_GO_GRPC_VERSION:v%=%) || $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)

generate: tools
	PATH="$(GOBIN):$$PATH" $(GO) generate ./...

check-generated: generate ## The committed generated code is what `make generate` writes.
	@git diff --exit-code -- '*.pb.go' && test -z "$$(git status --porcelain -- '*.pb.go')" || (echo "generated code is not current: run make generate"; exit 1)

demo: ## The README's demo job on the embedded local cluster.
	$(GO) run ./examples/purchases
