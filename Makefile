# Strata: a Kafka wire-compatible broker.
#   make run    build and run a broker on 127.0.0.1:9092 with data in ./data
#   make test   format check, vet, install test tools, race-enabled tests
#   make build  static binary in bin/strata
#   make bench  benchmarks

GO ?= go
TEST_TIMEOUT ?= 15m
ARGS ?=

.PHONY: run build test fmt-check vet tools bench clean

run: build
	./bin/strata $(ARGS)

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/strata ./cmd/strata

test: fmt-check vet tools
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

fmt-check:
	@unformatted=$$(find . -name '*.go' -not -path './.git/*' -not -path '*/.cache/*' -print0 | xargs -0 gofmt -l); \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt needed on:"; echo "$$unformatted"; exit 1; \
	fi

vet:
	$(GO) vet ./...

# Tools the end-to-end tests drive as real clients.
tools:
	./scripts/install-kcat.sh

bench:
	$(GO) test -bench=. -run='^$$' -benchmem ./...

clean:
	rm -rf bin
