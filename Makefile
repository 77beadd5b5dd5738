# oz0: the Orchestrator Zero plugin toolchain. `make demo` and `make test` work on a fresh machine.
GO      ?= go
BIN     ?= bin/oz0
BENCH   ?= .
COUNT   ?= 6
# go test's own bound is 10 minutes a package; cmd/oz0's scripts run the templates on their real
# frameworks (each session imports the framework), which takes longer on a loaded machine.
TEST_TIMEOUT ?= 45m
export CGO_ENABLED := 0
# Where tests leave what a person may want to look at: the dev UI's browser tests write a
# screenshot of each page to $(OZ0_TEST_ARTIFACTS)/ui/.
export OZ0_TEST_ARTIFACTS ?= $(CURDIR)/test-output

.PHONY: build test test-cold test-deps cross race fuzz demo bench bench-peers lint lint-templates lint-workflows check-release release-snapshot clean test-frameworks-latest

# Tools the checks run, pinned; `go run` builds each once and keeps it in the Go build cache.
GORELEASER := github.com/goreleaser/goreleaser/v2@v2.15.1
ACTIONLINT := github.com/rhysd/actionlint/cmd/actionlint@v1.7.12

# scripts/build.sh is go build saying what it fetches and compiles, with a count, every 5 s
# while it works (a fresh machine's build is otherwise silent for minutes).
build:
	@echo "build: $(BIN) (a few minutes on a fresh machine, seconds once Go's cache has it)"
	@GO="$(GO)" scripts/build.sh $(BIN) -trimpath

# The whole suite: formatting, vet, the cross builds, the GitHub Actions workflows, the Python templates under their own linters, unit tests, fuzz seeds, the
# testscript end-to-end scripts (which also run the templates' Python tests with unittest and
# pytest, and the Node templates' with node --test on their real framework) and the dev UI's tests
# in headless Chromium, then the race detector. The release configuration is checked twice: by
# goreleaser itself (check-release; building goreleaser takes a few minutes on a fresh machine)
# and, in go test, against goreleaser's schema (cmd/oz0/release_test.go), for a quick answer.
# The tests run the Node the Node templates support (scripts/node.env): the machine's, or where it
# is older the one test-deps installed (scripts/node-path.sh puts it first on PATH).
test: test-deps lint cross check-release lint-workflows lint-templates
	@echo "test: go test ./... (units, the scripts with the templates on their real frameworks, the browser tests: several minutes)"
	PATH="$$(scripts/node-path.sh)$$PATH" $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	@$(MAKE) --no-print-directory race

# The end-to-end scripts again with every session made at its job, as the platform's cold start
# makes it: each oz0 dev, oz0 plugin test and oz0 eval in them gets --cold (cmd/oz0/script_test.go's
# OZ0_TEST_SESSIONS), but for the scripts about sessions made ahead. make test runs them with the
# default, forked or made ahead; this is the other half, longer, run before a release.
test-cold: build test-deps
	PATH="$$(scripts/node-path.sh)$$PATH" OZ0_TEST_SESSIONS=cold $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run '^TestScripts$$' ./cmd/oz0

# The packages whose goroutines share state, under the race detector. On linux -race needs cgo,
# so this step alone sets CGO_ENABLED=1 (with a C compiler: test-deps installs gcc); the binary
# and every other test stay CGO_ENABLED=0.
RACE_PKGS := ./devserver/... ./gateway/... ./fakemodel/... ./harnesskit/... ./supervisor/... ./conformance/... ./api/client/... ./telemetry/... ./eval/...
race: test-deps
	PATH="$$(scripts/node-path.sh)$$PATH" CGO_ENABLED=1 $(GO) test -race -count=1 $(RACE_PKGS)

# oz0 builds for linux and darwin on amd64 and arm64; lint and test build the native one (linux/amd64
# on CI), this builds the other system, and vet on darwin compiles its test files too. One
# architecture a system: no file of oz0's depends on the architecture (only on the system), and
# each more target costs a fresh machine ~45 s; the release (goreleaser) builds all four.
CROSS := darwin/arm64
cross:
	@echo "cross: building and vetting for $(CROSS) (~45 s each on a fresh machine, seconds once cached)"
	@for t in $(CROSS); do \
	  echo "GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build ./..."; \
	  GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build ./... || exit 1; \
	done
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...

# What the tests need and a fresh machine lacks (pytest, gcc for the race detector, Node and npm,
# ShellCheck, Chromium for the dev UI's tests), uv (pinned, scripts/uv.env, from PyPI into
# ~/.cache/oz0-test: the Python templates' tests install their real frameworks with it, into uv's
# cache there), the Node templates' locked dependencies from npm, into a cache shared across runs
# (nothing to do once cached), and pyright for lint-templates.
test-deps:
	@scripts/test-deps.sh

# Every Python template, rendered with the longest name, on its real pinned framework: uv lock,
# uv sync, uv run pytest, oz0 plugin lint, oz0 plugin test, ruff (check and format) and pyright
# with its own settings.
lint-templates: build test-deps
	@scripts/lint-templates.sh $(BIN)

# Framework drift: every template against the newest release of its framework (the Python ones
# by uv without the tests' fixed date, strands-ts with the newest @strands-agents/sdk, adk-ts with
# the newest @google/adk), in temporary copies; a report of what passes and what breaks, the pins
# untouched. Network needed.
# .github/workflows/frameworks-latest.yml runs it weekly.
test-frameworks-latest: build test-deps
	@mkdir -p $(OZ0_TEST_ARTIFACTS)
	@PATH="$$(scripts/node-path.sh)$$PATH" scripts/frameworks-latest.sh $(BIN)

# actionlint over the repository's workflows (and action.yml, which plugin-action.yml uses) and
# every template's rendered CI workflow.
lint-workflows: build
	@$(NEED_SHELLCHECK)
	@ACTIONLINT="$(GO) run $(ACTIONLINT)" scripts/lint-workflows.sh $(BIN)

# .goreleaser.yaml is valid for the goreleaser that releases oz0, by goreleaser itself.
check-release:
	@echo "check-release: goreleaser check (building goreleaser takes a few minutes on a fresh machine, seconds once cached)"
	$(GO) run $(GORELEASER) check

# The release, built locally into dist/ (archives and checksums.txt for linux and darwin, amd64 and
# arm64), without a tag and without publishing anything.
release-snapshot:
	$(GO) run $(GORELEASER) release --snapshot --clean

# The main job, offline: the guide end to end (scaffold, test, lint, oz0 dev on the fake model,
# oz0 run, the stream, a run that waits for a person's approval), then the servers stopped.
demo: build
	@scripts/e2e-kit.sh $(BIN)

# oz0 dev against the peers its templates' frameworks ship, adk web and langgraph dev, on the same
# agent and fake model, alternated in one run (cmd/oz0/peers_bench_test.go; the figures in
# docs/performance.md): the peers installed once (scripts/peers-env.sh, pinned, into the tests'
# cache), then the benchmark, its tables on stdout and in bench-peers.out. Not part of make test.
# PEERS=adk or PEERS=langgraph narrows it; OZ0_BENCH_BIN=/path/to/oz0 times that binary and
# OZ0_BENCH_DEV_FLAGS='...' adds flags to each oz0 dev, for a before and after.
PEERS ?= .
bench-peers: SHELL := /bin/bash
bench-peers: .SHELLFLAGS := -o pipefail -c
bench-peers: test-deps
	@scripts/peers-env.sh
	cd cmd/oz0 && $(GO) test -run '^$$' -bench '^BenchmarkPeers$$/$(PEERS)' -benchtime 1x -timeout 90m . | tee ../../bench-peers.out

BENCHSTAT := golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

# Benchmarks, COUNT runs each, summarised by benchstat (medians with their spread); the figures
# in docs/performance.md come from this command. The raw runs stay in bench.out. BenchmarkPeers
# (a quarter of an hour a run, on frameworks installed apart) is bench-peers' alone.
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -skip '^BenchmarkPeers$$' -benchmem -count $(COUNT) ./... | tee bench.out
	$(GO) run $(BENCHSTAT) bench.out

# Fuzzing, each target for FUZZTIME: the protocol decoder, the manifest and agent loaders, the fake
# model's script and request parsers, lint's Python scan, the hooks loader, the gateway's request reading and rewriting, the store's usage scan. What a
# target finds is written under its package's testdata/fuzz/ and from then on runs with go test,
# as a regression test: commit it with the fix.
FUZZTIME ?= 20s
# Minimizing each new input eats a short run (the engine's default is 60 s an input): a crasher
# is kept as found, which is as good a regression test.
FUZZMIN ?= 1s
FUZZ := ./harnesskit:FuzzDecode ./lint:FuzzLoadManifest ./lint:FuzzLoadAgent ./lint:FuzzNodeHarness ./lint:FuzzPythonCode \
	./fakemodel:FuzzParseScript ./fakemodel:FuzzRequest \
	./devserver/tenanthooks:FuzzParse ./gateway:FuzzTopLevel ./gateway:FuzzRewriteRequest \
	./devserver/store:FuzzScanUsage
fuzz:
	@for t in $(FUZZ); do \
	  echo "go test -run '^$$' -fuzz '^$${t#*:}$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) $${t%%:*}"; \
	  $(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) $${t%%:*} || exit 1; \
	done

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@$(NEED_SHELLCHECK)
	shellcheck scripts/*.sh

# ShellCheck: make lint runs it, and actionlint runs it on the workflows' run steps, where it
# would skip them silently without it. make test-deps installs it.
NEED_SHELLCHECK := command -v shellcheck >/dev/null || { echo "make: ShellCheck is missing: make test-deps installs it (or apt-get install shellcheck, brew install shellcheck)" >&2; exit 1; }

clean:
	rm -rf bin dist test-output
