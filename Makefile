# s3pd's build, checks and benchmarks. `make check` is what CI runs.
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
PKGS     := ./...
# A count, not a duration: a time-based -fuzztime can end while a worker
# is starting and fail the run (a known Go fuzzing flake).
FUZZTIME ?= 2000x
# A new input is minimised for at most this long: the default (60s)
# would spend a short run minimising one input instead of fuzzing.
FUZZMINIMIZE ?= 2s
# staticcheck, pinned; `go run` fetches it through the module proxy into
# the module cache, outside go.mod.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build check fmt vet staticcheck test test-sim test-netns test-short fuzz tidy lint bench bench-tls bench-budget bench-copy bench-list bench-directio bench-steady bench-fleet release-check soak clean

all: build

## build: the s3pd binary in ./s3pd
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o s3pd .

## check: gofmt, vet, staticcheck, the tests with -race, the whole
## simulated-network grid, the network-namespace tests, a short fuzz run,
## module tidiness
check: fmt vet staticcheck tidy test test-sim test-netns fuzz

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags netns ./internal/netnstest/

## staticcheck: bugs, dead code and simplifications vet does not report
staticcheck:
	$(STATICCHECK) $(PKGS)
	$(STATICCHECK) -tags netns ./internal/netnstest/

## test: every test with the race detector
test:
	$(GO) test -race -timeout 20m $(PKGS)

## test-sim: the window's rule over the whole simulated-network grid,
## without -race (a -race run takes one case in eight: the simulation is
## one goroutine, and the detector makes it 30 times as slow)
test-sim:
	$(GO) test -count=1 -run 'TestSim' ./pkg/transfer/

## test-netns: multi-NIC transfers over capped veth pairs in network
## namespaces (root only; they skip otherwise). Without -race: they measure
## throughput against caps, and the emulator runs in the test process.
test-netns:
	$(GO) test -count=1 -tags netns -timeout 10m ./internal/netnstest/

test-short:
	$(GO) test -short $(PKGS)

## soak: the randomised soak (faults, SIGKILLs, concurrent runs, resume)
## for SOAK (default 5m; CI's make test runs it for 20s); SOAK_SEED
## replays a round
SOAK ?= 5m
soak:
	S3PD_SOAK=$(SOAK) S3PD_SOAK_SEED=$(SOAK_SEED) $(GO) test -count=1 -timeout 0 -run '^TestSoak$$' -v ./e2e/

## fuzz: a short run of each fuzz target (seed corpora are committed);
## KEYFUZZ=N also runs N rounds of the differential fuzz of hostile keys
## (TestHostileKeys; make test runs its default 18 rounds), KEYFUZZ_SEED
## replays from a seed
KEYFUZZ ?=
KEYFUZZ_SEED ?=
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzRelPath$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./pkg/local
	@if grep -qs 'func FuzzCombine' pkg/checksum/*_test.go; then \
		$(GO) test -run '^$$' -fuzz '^FuzzCombine$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./pkg/checksum; fi
	@if [ -n "$(KEYFUZZ)" ]; then \
		S3PD_KEYFUZZ_ROUNDS=$(KEYFUZZ) S3PD_KEYFUZZ_SEED=$(KEYFUZZ_SEED) $(GO) test -count=1 -timeout 0 -run '^TestHostileKeys$$' ./e2e/; fi

## tidy: fail if go.mod or go.sum are not tidy
tidy:
	@cp go.mod /tmp/s3pd-go.mod.bak && cp go.sum /tmp/s3pd-go.sum.bak; \
	$(GO) mod tidy; \
	if ! cmp -s go.mod /tmp/s3pd-go.mod.bak || ! cmp -s go.sum /tmp/s3pd-go.sum.bak; then \
		cp /tmp/s3pd-go.mod.bak go.mod; cp /tmp/s3pd-go.sum.bak go.sum; \
		echo "go.mod or go.sum is not tidy: run go mod tidy"; exit 1; fi

## lint: gofmt, vet and staticcheck
lint: fmt vet staticcheck

## bench: the benchmarks of docs/BENCHMARKS.md (loopback, RSS, S3-like,
## request budget); OLD=REV also measures s3pd built at git revision REV
bench: build
	bash bench/run.sh

## bench-tls: the loopback rows over HTTP and HTTPS side by side, in the
## same rounds (s3pd, the bare clients, the transfer manager)
bench-tls: build
	BENCH='^BenchmarkLoopback(TLS)?$$' BUDGET= S3PD_BENCH_CLIENTS=$${S3PD_BENCH_CLIENTS:-bare,s3pd,transfermanager} bash bench/run.sh

## bench-budget: only the request-budget cases; QUICK=1 scales them down
## (one case: BUDGET='^BenchmarkBudget$$/^case=mcr48$$')
bench-budget: build
	BENCH= S3PD_BENCH_QUICK=$(QUICK) bash bench/run.sh

## bench-copy: s3pd copy against cp and the SDK's upload manager
bench-copy:
	bash bench/copy.sh

## bench-directio: --direct-io on against off on xfs over a loop device,
## ROUNDS interleaved rounds (default 10), each run in a memory cgroup (root)
bench-directio:
	bash bench/directio.sh

## bench-list: planning 10^6 keys over 100 sub-prefixes under a 30 ms
## model, one listing stream against fan-out, COUNT (5) rounds side by side
bench-list:
	bash bench/list.sh

## bench-steady: bench's steady figure beside get --benchmark of the same
## mix against the same emulator, and the loopback ceilings, ROUNDS (5)
## interleaved rounds of DURATION (30s) each
bench-steady:
	bash bench/steady.sh

## bench-fleet: four `get --fleet K/4` nodes on a bridge against four
## independent gets, all through one 200 Mbit/s link to the emulator, in
## network namespaces (root), COUNT (5) rounds side by side
bench-fleet:
	bash bench/fleet.sh

## release-check: validate .goreleaser.yaml with goreleaser itself (not
## part of check: building goreleaser fetches hundreds of modules)
GORELEASER ?= $(GO) run github.com/goreleaser/goreleaser/v2@v2.17.0
release-check:
	GOFLAGS= $(GORELEASER) check

clean:
	rm -f s3pd
	rm -rf dist completions manpages
