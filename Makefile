# The two commands a newcomer needs: `make run` and `make test`.

GO ?= go

.PHONY: run test test-go deps vet fuzz bench build

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
