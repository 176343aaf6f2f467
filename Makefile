# Strata: a Kafka wire-compatible broker.
#   make run    build and run a broker on 127.0.0.1:9092 with data in ./data
#   make test   format check, vet, install test tools, race-enabled tests
#   make build  static binaries in bin/strata and bin/strata-proxy
#   make bench  Strata vs Apache Kafka side by side (bench/, writes BENCHMARKS.md)
#   make gobench  the go test benchmarks
#   make fuzz   every Fuzz* target in the repo for FUZZTIME each (default 30s)
#   make chaos  longer process-kill runs (chaos/), 200 kills by default

GO ?= go
TEST_TIMEOUT ?= 15m
ARGS ?=

.PHONY: run build test fmt-check vet tools compose-check bench gobench clean compat chaos

run: build
	./bin/strata $(ARGS)

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/strata ./cmd/strata
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/strata-proxy ./cmd/strata-proxy

test: fmt-check vet tools compose-check
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

fmt-check:
	@unformatted=$$(find . -name '*.go' -not -path './.git/*' -not -path '*/.cache/*' -print0 | xargs -0 gofmt -l); \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt needed on:"; echo "$$unformatted"; exit 1; \
	fi

vet:
	$(GO) vet ./...

# docker-compose.yml must validate; Docker itself is not needed to run it. Without the
# compose plugin, Debian's docker-compose is installed to check it.
compose-check:
	@if docker compose version >/dev/null 2>&1; then docker compose config -q && echo "docker compose config: ok"; \
	else ./scripts/apt-install.sh docker-compose docker-compose && docker-compose config -q && echo "docker-compose config: ok"; fi

# Tools the end-to-end tests drive as real clients, and Apache Kafka (TestAdoptKafkaLogDir
# runs it to write the log dir Strata adopts); both installs are cached.
tools:
	./scripts/install-kcat.sh
	./compat-tests/scripts/install-kafka.sh

# Strata and the reference Kafka (compat-tests/scripts/install-kafka.sh) one after the
# other under the same franz-go workloads; BENCH_ARGS passes flags (-quick, -workloads W1,W4).
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
# STRATA_CHAOS_POWERLOSS=1, STRATA_CHAOS_SEED (README, Testing).
CHAOS_ENV ?= STRATA_KILLS=200
chaos:
	env $(CHAOS_ENV) $(GO) test -count=1 -v -timeout 180m -run 'Kills|PowerLoss' ./chaos

# Compatibility matrix: real clients against Strata and Apache Kafka 4.1
# (compat-tests/README.md). Writes compat-tests/report/matrix.{json,md}; fails only when a
# cell of compat-tests/expected-pass.txt does not pass on Strata. COMPAT_ARGS passes flags.
COMPAT_ARGS ?=
compat:
	cd compat-tests && $(GO) run ./cmd/compat $(COMPAT_ARGS)
