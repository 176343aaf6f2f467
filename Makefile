# Strata: a Kafka wire-compatible broker.
#   make run    build and run a broker on 127.0.0.1:9092 with data in ./data
#   make test   format check, vet, install test tools, race-enabled tests
#   make build  static binaries in bin/strata and bin/strata-proxy
#   make bench  Strata vs Apache Kafka side by side (bench/, writes BENCHMARKS.md)
#   make gobench  the go test benchmarks
#   make fuzz   every Fuzz* target in the repo for FUZZTIME each (default 30s)
#   make chaos  longer process-kill runs (chaos/), one node and three, 200 kills by default
#   make cluster-chaos  three-node failover, random-kill, network-partition, slow-follower, group-offsets, exactly-once and voter-change runs (chaos/cluster.go), not in make test

GO ?= go
TEST_TIMEOUT ?= 30m
ARGS ?=

.PHONY: run build test fmt-check vet tools bench gobench clean compat chaos cluster-chaos

run: build
	./bin/strata $(ARGS)

# strata --version: the release from git describe ("dev" outside git) and the commit.
# The commit is also passed by flag because a git worktree gets no vcs stamp;
# -buildvcs=auto undoes a GOFLAGS=-buildvcs=false so a clone's build records vcs.*.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)

build:
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=auto -ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT)" -o bin/strata ./cmd/strata
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/strata-proxy ./cmd/strata-proxy

test: fmt-check vet tools
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

fmt-check:
	@unformatted=$$(find . -name '*.go' -not -path './.git/*' -not -path '*/.cache/*' -print0 | xargs -0 gofmt -l); \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt needed on:"; echo "$$unformatted"; exit 1; \
	fi

vet:
	$(GO) vet ./...

# Tools the end-to-end tests drive as real clients: kcat, Apache Kafka 4.4.0's jars for its
# command-line tools and as a control (cached in compat-tests/.cache/kafka-4.4.0, shared
# with make compat, make bench and make chaos), and Kafka Streams 4.4.0 (chaos's word count).
tools:
	./scripts/install-kcat.sh
	./compat-tests/scripts/install-kafka.sh
	./compat-tests/scripts/install-streams.sh

# Strata and the reference Apache Kafka 4.4.0 (compat-tests/scripts/install-kafka.sh) one
# after the other under the same franz-go workloads, then three of each (RF=3); BENCH_ARGS
# passes flags (-quick, -workloads W1,W4, -no-cluster, -cluster-only).
BENCH_ARGS ?=
bench:
	./compat-tests/scripts/install-kafka.sh
	$(GO) run ./bench/cmd/strata-bench $(BENCH_ARGS)

gobench:
	$(GO) test -bench=. -run='^$$' -benchmem ./...

FUZZTIME ?= 30s
# Minimizing a new interesting input counts against FUZZTIME but not as an
# execution; the default (60s) lets one multi-KiB input stall a target.
FUZZMINIMIZETIME ?= 5s

# go test -fuzz takes one target in one package per run, so each Fuzz*
# function found under ./... runs on its own; new crashers land in that
# package's testdata/fuzz and fail the target.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
		for fn in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
			echo "== $$pkg $$fn ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $$pkg; \
		done; \
	done

clean:
	rm -rf bin

# Longer process-kill runs (chaos/): CHAOS_ENV sets STRATA_KILLS, STRATA_CHAOS_KAFKA=1,
# STRATA_CHAOS_POWERLOSS=1, STRATA_CHAOS_SEED (README, Testing); the Kafka control is 4.4.0.
CHAOS_ENV ?= STRATA_KILLS=200
# The three-node random kills, then the split layout's (3 controllers, 3 brokers, any node
# killed), follow the single node's (Strata's clusters always; Kafka's with STRATA_CHAOS_KAFKA=1);
# then the share group runs (chaos/share.go) with 20 broker kills (STRATA_SHARE_KILLS).
chaos:
	./compat-tests/scripts/install-kafka.sh
	env $(CHAOS_ENV) $(GO) test -count=1 -v -timeout 180m -run '^Test(Strata|Kafka)Kills$$|PowerLoss' ./chaos
	env STRATA_CLUSTER=1 $(CHAOS_ENV) $(GO) test -count=1 -v -timeout 180m -run '^Test(Strata|Kafka)Cluster(Split)?Kills$$' ./chaos
	env STRATA_SHARE_KILLS=20 $(CHAOS_ENV) $(GO) test -count=1 -v -timeout 60m -run '^Test(Strata|Kafka)Share(MemberFaults|BrokerKills)$$' ./chaos

# Three-node runs (chaos/cluster.go): leader failover by SIGKILL and SIGSTOP, the SIGKILL
# one and an active-controller kill with split roles (3 controllers, 3 brokers), random
# kills (STRATA_KILLS of them, 200 by default) in both layouts, group coordinator kills and an
# exactly-once consume-transform-produce run under leader and coordinator kills. CHAOS_ENV adds STRATA_CHAOS_KAFKA=1 for
# the Apache Kafka 4.4.0 control and STRATA_CLUSTER=1 for Strata (README, Testing).
cluster-chaos:
	./compat-tests/scripts/install-kafka.sh
	env $(CHAOS_ENV) $(GO) test -count=1 -v -timeout 300m -run 'Cluster(Failover|SplitFailover|Kills|SplitKills|Partition|SlowFollower|GroupOffsets|ExactlyOnce|ChangesVoters)|Netns(Isolate|Shape)' ./chaos

# Compatibility matrix: real clients against Strata and Apache Kafka 4.4.0
# (compat-tests/README.md). Writes compat-tests/report/matrix.{json,md}; fails only when a
# cell of compat-tests/expected-pass.txt does not pass on Strata. COMPAT_ARGS passes flags.
COMPAT_ARGS ?=
compat:
	cd compat-tests && $(GO) run ./cmd/compat $(COMPAT_ARGS)
