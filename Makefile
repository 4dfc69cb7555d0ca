# The two commands a newcomer needs: `make run` and `make test`.

GO ?= go

.PHONY: run test test-go deps vet fuzz bench build load load-quick

# Runs the bridge on the embedded sandbox gateway (no account, no network).
run:
	$(GO) run ./cmd/soapbridge

# Installs what the tests need when it is missing (php-cli, php-soap,
# libaxis-java, chromium, playwright-core, PostgreSQL), then runs every test.
test: deps vet test-go

deps:
	bash .ci/install-deps
	bash .ci/start-postgres

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

test-go:
	$(GO) test -count=1 -timeout 20m ./...
	$(GO) test -count=1 -race -timeout 20m ./restbackend/... ./store/...

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o bin/soapbridge ./cmd/soapbridge
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o bin/gatewaysandbox ./cmd/gatewaysandbox

# A few minutes of fuzzing of the SOAP decoder.
fuzz:
	$(GO) test ./soapenc -run='^$$' -fuzz=FuzzDecode -fuzztime=3m

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./soapenc ./operations ./restbackend ./store

# The load harness (docs/performance.md): every scenario, baselines
# alternated, about 10 minutes on loopback. Installs php-fpm and nginx for
# the PHP peer first (root; the tests never need them). LOAD_FLAGS adds
# soapload flags, e.g. LOAD_FLAGS='-d 5s -rounds 1'.
load:
	bash bench/peers/php/install-deps || echo "load: PHP peer tools missing; its scenarios will be skipped"
	$(GO) run ./cmd/soapload -json bench/load-report.json $(LOAD_FLAGS)

# A smoke run of the same harness (seconds).
load-quick:
	$(GO) run ./cmd/soapload -quick $(LOAD_FLAGS)
