# The two commands a newcomer needs: `make run` and `make test`.

GO ?= go

.PHONY: run test test-go test-race deps vet fmt-check fuzz bench build load load-quick

# Runs the bridge on the embedded sandbox gateway (no account, no network).
# The sandbox keeps its payments in SOAPBRIDGE_SANDBOX_STATE, next to the
# default SQLite database (soapbridge.db), so a restarted `make run` still
# knows the payments the database refers to. Your own value of the variable
# wins; `make run SOAPBRIDGE_SANDBOX_STATE=` keeps them in memory only.
SOAPBRIDGE_SANDBOX_STATE ?= soapbridge-sandbox.json
run:
	SOAPBRIDGE_SANDBOX_STATE='$(SOAPBRIDGE_SANDBOX_STATE)' $(GO) run ./cmd/soapbridge

# Installs what the tests need when it is missing (php-cli, php-soap,
# libaxis-java, chromium, playwright-core, PostgreSQL), then runs every pass:
# the gofmt gate, go vet, the tests, and the tests of the packages with
# concurrent state under the race detector. Each pass runs whatever an
# earlier one did; a summary at the end lists each pass's result and every
# failed package and test, and the exit status is non-zero if any failed.
test:
	@MAKE='$(MAKE)' bash .ci/passes deps fmt-check vet test-go test-race

deps:
	bash .ci/install-deps
	bash .ci/start-postgres

# The vet and test passes build as `make build` does (no cgo, -trimpath),
# so compiled packages are shared: the tests, the end-to-end tests' build of
# the binary and the docs check's `make build`, `go run` and benchmarks
# compile each package once instead of once per set of flags. Test binaries
# are linked without DWARF (-w): the largest link takes half the time and
# less memory. The race pass needs cgo.
TEST_ENV = CGO_ENABLED=0 GOFLAGS='$(strip $(shell $(GO) env GOFLAGS) -trimpath -ldflags=-w)'

vet:
	$(TEST_ENV) $(GO) vet ./...

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
	$(TEST_ENV) $(GO) test -count=1 -timeout 30m ./...

# The race pass covers every package with concurrent state: the core and
# its adapters, the wiring (reload, rate sharing, the usage record; its
# end-to-end tests build the bridge with -race as well, see
# cmd/soapbridge/race_on_test.go), internal/ (access, metrics, tracing…),
# the REST client, the sandbox and the store. internal/doccheck and
# internal/buildgate are left to test-go: they run the docs' commands and
# the build gates as child processes, nothing of theirs is concurrent in
# the test binary, and under -race they only add minutes. So do the
# end-to-end tests of the client libraries (Axis, suds, zeep, PHP
# SoapClient, the variants): they check the wire, which the detector does
# not see, and a JVM under a loaded race pass takes minutes; test-go runs
# them.
RACE_PKGS = ./operations/... ./cmd/soapbridge/... ./internal/... ./restbackend/... ./store/...
RACE_SKIP = ^Test(Axis|Suds|Zeep|PHP|Variants)
test-race:
	CGO_ENABLED=1 $(GO) test -count=1 -race -timeout 30m -skip '$(RACE_SKIP)' \
		$$($(GO) list $(RACE_PKGS) | grep -v -e /internal/doccheck -e /internal/buildgate)

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o bin/soapbridge ./cmd/soapbridge
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o bin/gatewaysandbox ./cmd/gatewaysandbox

# A few minutes of fuzzing of the SOAP decoder.
fuzz:
	$(GO) test ./soapenc -run='^$$' -fuzz=FuzzDecode -fuzztime=3m

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./soapenc ./operations ./operations/soapapi ./restbackend ./store

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
