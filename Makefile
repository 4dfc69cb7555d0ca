# The two commands a newcomer needs: `make run` and `make test`.

GO ?= go

.PHONY: run test test-go deps vet fmt-check fuzz bench build

# Runs the bridge on the embedded sandbox gateway (no account, no network).
run:
	$(GO) run ./cmd/soapbridge

# Installs what the tests need when it is missing (php-cli, php-soap,
# libaxis-java, chromium, playwright-core, PostgreSQL), then runs every test.
test: deps vet test-go

deps:
	bash .ci/install-deps
	bash .ci/start-postgres

vet: fmt-check
	$(GO) vet ./...

# Every Go file of the tree, tracked by git or not (git is not needed):
# what the compiler sees is what gets checked. Fails when gofmt itself fails
# (a file that does not parse) or when there is no Go file to check.
FMT_PRUNE := -name node_modules -o -name .git -o -name .e2eproto -o -name bin
fmt-check:
	@files=$$(find . \( $(FMT_PRUNE) \) -prune -o -name '*.go' -type f -print); \
	test -n "$$files" || { echo "fmt-check: no Go files under $$(pwd)"; exit 1; }; \
	out=$$(gofmt -l $$files) || { echo "fmt-check: gofmt failed"; exit 1; }; \
	test -z "$$out" || { echo "gofmt needed:"; echo "$$out"; exit 1; }

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
