# anepack: the two commands a new machine needs are `make demo` and `make test`.
GO       ?= go
BIN      := bin
OUT      := out
DEMO_CFG := configs/qwen2-tiny.json

.PHONY: all build demo test test-tools vet fuzz-short bench clean

all: build

# The commit goes into the binaries for `anerun version` (go build cannot record it where
# GOFLAGS has -buildvcs=false).
COMMIT   := $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +modified)
LDFLAGS  := -X github.com/anepack/anepack/internal/version.Commit=$(COMMIT)

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

# The whole pipeline on a synthetic model: SYNTH-1 checkpoint -> .aneb -> inspect -> verify ->
# generated text (gibberish: the weights are synthetic, but every step is the real one).
demo: build
	@mkdir -p $(OUT)
	$(BIN)/anepack synth --config $(DEMO_CFG) --seed 1 -o $(OUT)/qwen2-tiny
	$(BIN)/anepack $(OUT)/qwen2-tiny -o $(OUT)/qwen2-tiny.aneb --force
	$(BIN)/anepack inspect $(OUT)/qwen2-tiny.aneb
	$(BIN)/anepack verify $(OUT)/qwen2-tiny.aneb
	$(BIN)/anerun $(OUT)/qwen2-tiny.aneb "Hello! Who are you?" --max-tokens 32 --verbose
	@echo
	@echo "Next: $(BIN)/anerun -i $(OUT)/qwen2-tiny.aneb (a chat; /help lists its commands), or a real model:"
	@echo "      $(BIN)/anerun Qwen/Qwen2.5-0.5B-Instruct \"Why is the sky blue?\" (fetched and packed once, then from the store)"

vet:
	$(GO) vet ./...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./...

# What the tests need from outside Go: a real OCI registry (Debian's docker-registry, with
# htpasswd for its auth tests) for the distribution tests, qemu-aarch64 (Debian's qemu-user)
# to run the arm64 kernels (NEON, SDOT) on this amd64 machine, and GNU as and objcopy
# (binutils) to check the byte encodings of the AMX instructions, which Go's assembler lacks.
test-tools:
	@command -v docker-registry >/dev/null && command -v htpasswd >/dev/null && command -v qemu-aarch64 >/dev/null && \
		command -v as >/dev/null && command -v objcopy >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-registry apache2-utils qemu-user binutils; }

# A real OpenAI client (the official openai npm package, pinned in package-lock.json) for the
# server tests.
SERVE_CLIENT := serve/testdata/openai-client
$(SERVE_CLIENT)/node_modules/.package-lock.json: $(SERVE_CLIENT)/package-lock.json
	cd $(SERVE_CLIENT) && npm ci --no-audit --no-fund

# Every test, then the pure-Go kernels and quantizer again with the assembly switched off, then
# both as arm64 code under qemu (the NEON assembly is otherwise only assembled here, never run;
# the quantizer must pack the same bits there), and the forward pass of the three MLP kinds
# (SwiGLU, GELU, GeGLU) on the NEON kernels against Hugging Face's logits, and one with an fp16
# KV cache (the NEON conversions): about 100 s under qemu; every family takes about 5 minutes
# there.
test: test-tools $(SERVE_CLIENT)/node_modules/.package-lock.json vet
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -tags noasm ./half/... ./quant/... ./runtime/kernels/... ./runtime/cpu/...
	GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64 ./half/ ./quant/ ./runtime/kernels/
	GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64 -run 'TestGoldenTeacherForcing$$/^(qwen2-tiny|gpt2-tiny|gemma3-tiny)$$/^f16$$' ./runtime/cpu/
	GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64 -run 'TestGoldenTeacherForcingF16Cache$$/^qwen2-tiny$$' ./runtime/cpu/
	$(MAKE) fuzz-short

# Every fuzz target of the repository (found by name, so new ones join by themselves) for
# FUZZTIME each; a crash or a failed assertion fails the target. go test fuzzes one target of
# one package per run. Go's fuzz coordinator can end a run that found nothing with a bare
# "context deadline exceeded" failure, when the -fuzztime deadline races its workers on a busy
# machine (golang/go#51484, #75804): such a run, with no failing input written, is reported and
# not counted; anything else that fails, fails the target.
FUZZTIME ?= 5s
fuzz-short:
	@set -e; grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do \
		for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$f"); do \
			echo "fuzz $$(dirname $$f) $$fn for $(FUZZTIME)"; \
			if out=$$($(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) "./$$(dirname $$f)" 2>&1); then \
				echo "$$out"; continue; \
			fi; \
			echo "$$out"; \
			if echo "$$out" | grep -q 'Failing input written to' || ! echo "$$out" | grep -qx '    context deadline exceeded'; then \
				exit 1; \
			fi; \
			echo "fuzz $$fn: the fuzzer's own deadline race (no failing input); not a failure"; \
		done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./half/ ./format/ ./synth/

clean:
	rm -rf $(BIN) $(OUT)
