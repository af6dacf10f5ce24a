# bootccm - one entry point: static build, sanitizer builds, tests, demo, install.
#
#   make            build/bootccm: fully static x86_64 musl binary (the product)
#   make dev        build/dev/bootccm: glibc, AddressSanitizer + UBSan, debug
#   make tsan       build/tsan/bootccm: glibc, ThreadSanitizer
#   make check      install what is missing, build everything, run every test
#   make demo       the main job on the bundled fake API server and metadata service
#   make fuzz       build the libFuzzer harnesses (build/fuzz/)
#   make image      build/bootccm-image.tar: OCI image archive of build/bootccm,
#                   tag bootccm:$(VERSION) (scripts/make-image.sh; import with
#                   ctr -n k8s.io images import)
#   make bench      the benchmarks in bench/ with the parameters bench/RESULTS.md
#                   records, printing their figures (minutes; not part of check)
#   make bench-peers  bench/peers.py: bootccm against kube-vip-cloud-provider
#                   on the real control plane, the ratio per figure
#   make soak       bench/soak.py (5,000 Nodes, 2,000 LoadBalancer Services, 10
#                   minutes of churn) and the long fault and failover matrices
#                   (30 s and 120 s outages, 50 kill -9 each); about an hour
#   make valgrind   build/glibc/bootccm (glibc, no sanitizer) under valgrind
#                   through 5 minutes of churn: 0 bytes definitely lost or fail
#   make fuzz-long  every fuzz harness for FUZZ_LONG_SECONDS (600) each,
#                   FUZZ_LONG_JOBS (1) at a time; execs and crashes per harness
#   make k8s        kube-apiserver, kube-controller-manager, kubectl, etcd and
#                   kwok built from the Go modules pinned in tests/k8s/ into
#                   ~/.cache/bootccm/k8s/<pin>/bin, and the peers pinned in
#                   bench/peers/ into ~/.cache/bootccm/k8s/peers/<hash>/bin
#                   (scripts/k8s-build.sh; once per pin; docs/build.md)
#   make check-k8s  make k8s and build/bootccm, then the tests in tests/k8s/
#                   against a real control plane on loopback (alone; make
#                   check runs them too)
#   make bench-k8s  make k8s and build/bootccm, then bench/node_burst.py and
#                   bench/lb_burst.py with --apiserver real: etcd, kube-apiserver,
#                   kube-controller-manager and kwok (minutes; not part of check)
#   make install    PREFIX=/usr/local DESTDIR=
#
# Each step prints one short line (CC, LD, GEN...); make V=1 prints the full
# commands instead, make -s nothing.

VERSION := 0.1.0
PREFIX ?= /usr/local
DESTDIR ?=
BUILD := build
PYTHON ?= /usr/bin/python3
FUZZ_SECONDS ?= 10
V ?= 0

# Quiet build (the kernel's, redis's): a step prints "  WHAT FILE" through
# $(call say,WHAT,FILE) and runs its command under $(Q). V=1 echoes the
# commands instead; make -s prints neither.
ifeq ($(V),1)
Q :=
else
Q := @
endif
ifeq ($(V)$(findstring s,$(firstword -$(MAKEFLAGS))),0)
SHORT := 1
endif
say = $(if $(SHORT),@printf '  %-9s %s\n' '$(1)' '$(2)')
MAKEFLAGS += --no-print-directory

SRCS := $(sort $(wildcard src/*.c src/*/*.c providers/*/*.c))
TLS_STATIC := src/http/tlsctx_wolfssl.c
TLS_DEV := src/http/tlsctx_blob.c
CORE := $(filter-out src/main.c $(TLS_STATIC) $(TLS_DEV),$(SRCS))
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
# Driver programs: small C programs that run one module (a reflector, the
# leader elector...) against the fake API server for the integration tests
# (tests/integration/).
DRIVER_SRCS := $(sort $(wildcard tests/drivers/drv_*.c))

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wpointer-arith -Wformat=2 -Wvla -Wno-format-truncation
CPPFLAGS_ALL := -D_GNU_SOURCE -Isrc -I$(BUILD)/gen

# --- static musl build (the shipped artifact) --------------------------------
DEPS := $(BUILD)/deps
STATIC_CC := musl-gcc
# The allocator: mimalloc's single object (scripts/deps.sh) defines malloc,
# free and the rest, so musl's mallocng is not linked for them. Four times
# faster JSON parsing than mallocng, for ~65 KiB (docs/build.md); its options
# are set by src/base/allocator.c. The glibc sanitizer and fuzz builds keep their
# own allocators.
STATIC_ALLOC := $(DEPS)/lib/mimalloc.o
STATIC_CFLAGS := -std=gnu11 -Os -ffunction-sections -fdata-sections $(WARN) \
	$(CPPFLAGS_ALL) -DCURL_STATICLIB -I$(DEPS)/include $(if $(STATIC_ALLOC),-DBOOTCCM_MIMALLOC)
STATIC_LDFLAGS := -static -Wl,--gc-sections -s -L$(DEPS)/lib
STATIC_LIBS := -lcurl -lwolfssl -ljson-c -lyaml -lm
STATIC_OBJS := $(patsubst %.c,$(BUILD)/static/%.o,$(CORE) src/main.c $(TLS_STATIC))

# --- glibc builds against Debian's -dev packages -----------------------------
DEV_CC := gcc
DEV_CFLAGS := -std=gnu11 -g -O1 -fno-omit-frame-pointer $(WARN) $(CPPFLAGS_ALL) -Itests/unit
SYS_LIBS := -lcurl -lwolfssl -ljson-c -lyaml -lpthread -lm
ASAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
TSAN := -fsanitize=thread
DEV_OBJS := $(patsubst %.c,$(BUILD)/dev/%.o,$(CORE) $(TLS_DEV))
TSAN_OBJS := $(patsubst %.c,$(BUILD)/tsan/%.o,$(CORE) $(TLS_DEV))
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/dev/tests/%,$(UNIT_SRCS))
TSAN_UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tsan/tests/%,$(UNIT_SRCS))
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
DRIVER_BINS := $(patsubst tests/drivers/%.c,$(BUILD)/dev/drivers/%,$(DRIVER_SRCS))
TSAN_DRIVER_BINS := $(patsubst tests/drivers/%.c,$(BUILD)/tsan/drivers/%,$(DRIVER_SRCS))

.PHONY: all static dev tsan unit fuzz check demo image bench install clean packages deps FORCE \
	glibc soak valgrind fuzz-long k8s check-k8s bench-k8s bench-peers
.DELETE_ON_ERROR:
# Keep every object: those of the test programs, drivers and fuzz harnesses
# are intermediate files of pattern rules, which make would otherwise delete
# after linking and so recompile on every run.
.SECONDARY:

all: static
static: $(BUILD)/bootccm

# The version header changes only when the version or the commit does.
$(BUILD)/gen/version.h: FORCE
	@mkdir -p $(@D)
	@c=$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown); \
	if [ -n "$$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then c="$$c-dirty"; fi; \
	printf '#define BOOTCCM_VERSION "%s"\n#define BOOTCCM_COMMIT "%s"\n' "$(VERSION)" "$$c" > $@.tmp; \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; $(if $(SHORT),printf '  %-9s %s\n' GEN $@;) fi

# scripts/deps.sh builds the four static libraries once per version set and
# rewrites deps.key only when that set changes.
$(BUILD)/deps.key: FORCE
	@scripts/deps.sh ensure $(BUILD)
deps: $(BUILD)/deps.key

$(BUILD)/static/%.o: %.c $(BUILD)/deps.key | $(BUILD)/gen/version.h
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(STATIC_CC) $(STATIC_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/static/src/main.o: $(BUILD)/gen/version.h

$(BUILD)/bootccm: $(STATIC_OBJS) $(BUILD)/deps.key
	$(call say,LD,$@)
	$(Q)$(STATIC_CC) $(STATIC_LDFLAGS) -o $@ $(STATIC_ALLOC) $(STATIC_OBJS) $(STATIC_LIBS)
	@ls -l $@ | awk '{printf "bootccm: %s bytes (%.2f MiB), ", $$5, $$5/1048576}'; file -b $@ | cut -d, -f1-5

$(BUILD)/dev/%.o: %.c | $(BUILD)/gen/version.h
	@mkdir -p $(@D)
	$(call say,CC [dev],$<)
	$(Q)$(DEV_CC) $(DEV_CFLAGS) $(ASAN) -MMD -MP -c $< -o $@
$(BUILD)/dev/src/main.o: $(BUILD)/gen/version.h
$(BUILD)/tsan/%.o: %.c | $(BUILD)/gen/version.h
	@mkdir -p $(@D)
	$(call say,CC [tsan],$<)
	$(Q)$(DEV_CC) $(DEV_CFLAGS) $(TSAN) -MMD -MP -c $< -o $@
$(BUILD)/tsan/src/main.o: $(BUILD)/gen/version.h

$(BUILD)/dev/bootccm: $(DEV_OBJS) $(BUILD)/dev/src/main.o
	$(call say,LD [dev],$@)
	$(Q)$(DEV_CC) $(ASAN) -o $@ $^ $(SYS_LIBS)
$(BUILD)/tsan/bootccm: $(TSAN_OBJS) $(BUILD)/tsan/src/main.o
	$(call say,LD [tsan],$@)
	$(Q)$(DEV_CC) $(TSAN) -o $@ $^ $(SYS_LIBS)

$(BUILD)/dev/tests/%: $(BUILD)/dev/tests/unit/%.o $(DEV_OBJS)
	@mkdir -p $(@D)
	$(call say,LD [dev],$@)
	$(Q)$(DEV_CC) $(ASAN) -o $@ $^ $(SYS_LIBS)
$(BUILD)/tsan/tests/%: $(BUILD)/tsan/tests/unit/%.o $(TSAN_OBJS)
	@mkdir -p $(@D)
	$(call say,LD [tsan],$@)
	$(Q)$(DEV_CC) $(TSAN) -o $@ $^ $(SYS_LIBS)

$(BUILD)/dev/drivers/%: $(BUILD)/dev/tests/drivers/%.o $(DEV_OBJS)
	@mkdir -p $(@D)
	$(call say,LD [dev],$@)
	$(Q)$(DEV_CC) $(ASAN) -o $@ $^ $(SYS_LIBS)
$(BUILD)/tsan/drivers/%: $(BUILD)/tsan/tests/drivers/%.o $(TSAN_OBJS)
	@mkdir -p $(@D)
	$(call say,LD [tsan],$@)
	$(Q)$(DEV_CC) $(TSAN) -o $@ $^ $(SYS_LIBS)

# glibc without a sanitizer: what valgrind runs (make valgrind)
GLIBC_OBJS := $(patsubst %.c,$(BUILD)/glibc/%.o,$(CORE) $(TLS_DEV) src/main.c)
$(BUILD)/glibc/%.o: %.c | $(BUILD)/gen/version.h
	@mkdir -p $(@D)
	$(call say,CC [glibc],$<)
	$(Q)$(DEV_CC) $(DEV_CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/glibc/src/main.o: $(BUILD)/gen/version.h
$(BUILD)/glibc/bootccm: $(GLIBC_OBJS)
	$(call say,LD [glibc],$@)
	$(Q)$(DEV_CC) -o $@ $^ $(SYS_LIBS)
glibc: $(BUILD)/glibc/bootccm

dev: $(BUILD)/dev/bootccm $(UNIT_BINS) $(DRIVER_BINS)
tsan: $(BUILD)/tsan/bootccm $(TSAN_UNIT_BINS) $(TSAN_DRIVER_BINS)

# --- fuzzing (clang libFuzzer) ------------------------------------------------
FUZZ_CFLAGS := -std=gnu11 -g -O1 $(CPPFLAGS_ALL) -fsanitize=fuzzer-no-link,address,undefined
FUZZ_OBJS := $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(CORE) $(TLS_DEV))
$(BUILD)/fuzz/obj/%.o: %.c | $(BUILD)/gen/version.h
	@mkdir -p $(@D)
	$(call say,CC [fuzz],$<)
	$(Q)clang $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/fuzz/%: $(BUILD)/fuzz/obj/tests/fuzz/%.o $(FUZZ_OBJS)
	@mkdir -p $(@D)
	$(call say,LD [fuzz],$@)
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(SYS_LIBS)
fuzz: $(FUZZ_BINS)

# --- tests ----------------------------------------------------------------------
packages:
	@scripts/install-packages.sh

unit: $(UNIT_BINS)
	@tests/run-unit.sh $(UNIT_BINS)

# The upstream programs build (at nice 19, in a session of their own) while
# bootccm's builds and the first suites run; tests/check.sh waits for that
# build (the pin's lock) before the suite that needs it, and shows its
# output. A failed build of ours stops it.
K8S_BG = $(BUILD)/k8s-build
check: packages
	$(Q)mkdir -p $(BUILD)
	$(Q)setsid scripts/k8s-build.sh ensure >$(K8S_BG).log 2>&1 & echo $$! >$(K8S_BG).pid
	$(Q)$(MAKE) static dev tsan fuzz || { kill -- -$$(cat $(K8S_BG).pid) 2>/dev/null; exit 1; }
	@BUILD=$(BUILD) PYTHON=$(PYTHON) FUZZ_SECONDS=$(FUZZ_SECONDS) \
		K8S_BUILD_LOG=$(K8S_BG).log tests/check.sh

demo: packages
	$(Q)$(MAKE) static
	@$(PYTHON) tests/demo.py --bootccm $(BUILD)/bootccm

# --- the real control plane ----------------------------------------------------
# Upstream programs built from their Go modules (tests/k8s/go.mod pins them);
# scripts/k8s-build.sh prints one line per binary and builds only what the
# cache for the current pin lacks.
k8s:
	@scripts/k8s-build.sh ensure

check-k8s: k8s
	$(Q)$(MAKE) static
	@BOOTCCM=$(BUILD)/bootccm BOOTCCM_K8S_BIN="$$(scripts/k8s-build.sh bindir)" \
		$(PYTHON) -m pytest -q -p no:cacheprovider tests/k8s

# --- image, benchmarks -----------------------------------------------------------
image: $(BUILD)/bootccm-image.tar
$(BUILD)/bootccm-image.tar: $(BUILD)/bootccm scripts/make-image.sh
	$(call say,IMAGE,$@ (bootccm:$(VERSION)))
	$(Q)sh scripts/make-image.sh $(BUILD)/bootccm $@ bootccm:$(VERSION)$(if $(filter 1,$(V)),, >/dev/null)

# The benchmarks run with their own defaults, the parameters bench/RESULTS.md
# records: cache_memory.sh NODES=5000 RUNS=5 REFLECTOR=1 (the environment may
# override them), json_decode.sh RUNS=3 ITERATIONS=20000, node_burst.py 1,000
# nodes, burst and before modes, QPS 100, 4 workers, one run (NODE_BURST_ARGS
# adds flags), lb_burst.py 1,000 LoadBalancer Services on the static provider
# with 5,000 Nodes cached, with and without the kube-vip annotation, QPS 100,
# 4 workers, one run (LB_BURST_ARGS adds flags), hcloud_requests.py the
# Hetzner Cloud API requests of node syncs at 1,000 and 5,000 nodes, balancer
# creation at 10 and 100, idle route passes at 90 and a steady hour at 1,000
# nodes and 50 Services (HCLOUD_REQUESTS_ARGS adds flags). Raw lines go to
# $(BUILD)/bench/*.jsonl; the figures (medians) are printed.
NODE_BURST_ARGS ?=
LB_BURST_ARGS ?=
HCLOUD_REQUESTS_ARGS ?=
bench: static
	@mkdir -p $(BUILD)/bench
	$(call say,BENCH,bench/cache_memory.sh)
	+$(Q)BUILD=$(BUILD) PYTHON=$(PYTHON) bench/cache_memory.sh
	$(call say,BENCH,bench/json_decode.sh)
	+$(Q)BUILD=$(BUILD) PYTHON=$(PYTHON) bench/json_decode.sh
	$(call say,BENCH,bench/node_burst.py)
	$(Q)$(PYTHON) bench/node_burst.py --bootccm $(BUILD)/bootccm \
		--json $(BUILD)/bench/node_burst.jsonl $(NODE_BURST_ARGS)
	$(call say,BENCH,bench/lb_burst.py)
	$(Q)$(PYTHON) bench/lb_burst.py --bootccm $(BUILD)/bootccm \
		--json $(BUILD)/bench/lb_burst.jsonl $(LB_BURST_ARGS)
	$(call say,BENCH,bench/hcloud_requests.py)
	$(Q)rm -f $(BUILD)/bench/hcloud_requests.jsonl
	$(Q)$(PYTHON) bench/hcloud_requests.py --bootccm $(BUILD)/bootccm \
		--json $(BUILD)/bench/hcloud_requests.jsonl $(HCLOUD_REQUESTS_ARGS)

# The node and LoadBalancer bursts against the real control plane of
# tests/k8s/ (bench/realcp.py; not part of check): node_burst.py 1,000 Nodes
# kept alive by kwok, burst mode, 3 runs; lb_burst.py 1,000 Services against
# 1,000 kwok Nodes, mode plain, 3 runs; QPS 100, 4 workers as above
# (NODE_BURST_K8S_ARGS and LB_BURST_K8S_ARGS add flags). Raw lines go to
# $(BUILD)/bench/*_real.jsonl.
NODE_BURST_K8S_ARGS ?=
LB_BURST_K8S_ARGS ?=
bench-k8s: k8s
	$(Q)$(MAKE) static
	@mkdir -p $(BUILD)/bench
	$(call say,BENCH,bench/node_burst.py --apiserver real)
	$(Q)BOOTCCM_K8S_BIN="$$(scripts/k8s-build.sh bindir)" $(PYTHON) bench/node_burst.py \
		--apiserver real --mode burst --runs 3 --bootccm $(BUILD)/bootccm \
		--json $(BUILD)/bench/node_burst_real.jsonl $(NODE_BURST_K8S_ARGS)
	$(call say,BENCH,bench/lb_burst.py --apiserver real)
	$(Q)BOOTCCM_K8S_BIN="$$(scripts/k8s-build.sh bindir)" $(PYTHON) bench/lb_burst.py \
		--apiserver real --mode plain --runs 3 --bootccm $(BUILD)/bootccm \
		--json $(BUILD)/bench/lb_burst_real.jsonl $(LB_BURST_K8S_ARGS)

# bootccm against its peers on the real control plane (bench/peers.py; make k8s
# builds the upstream programs and the peers; PEERS_ARGS adds flags).
PEERS_ARGS ?=
bench-peers: static k8s
	@mkdir -p $(BUILD)/bench
	$(call say,BENCH,bench/peers.py)
	$(Q)BOOTCCM=$(BUILD)/bootccm BOOTCCM_K8S_BIN="$$(scripts/k8s-build.sh bindir)" \
		$(PYTHON) bench/peers.py --json $(BUILD)/bench/peers.jsonl $(PEERS_ARGS)

# The long runs (not part of check): bench/soak.py with its defaults (SOAK_ARGS
# adds flags), then the fault and failover matrices at their long settings
# (BOOTCCM_FAULT_SOAK=1: minutes of churn, 50 kill -9 each), the outages
# once at 30 s and once at 120 s.
SOAK_ARGS ?=
soak: static
	@mkdir -p $(BUILD)/bench
	$(call say,BENCH,bench/soak.py)
	$(Q)$(PYTHON) bench/soak.py --bootccm $(BUILD)/bootccm --json $(BUILD)/bench/soak.jsonl $(SOAK_ARGS)
	$(call say,TEST,fault and failover matrices (long))
	$(Q)BOOTCCM_FAULT_SOAK=1 BOOTCCM=$(BUILD)/bootccm BOOTCCM_FAILOVER_JSON=$(BUILD)/bench/failover.jsonl \
		$(PYTHON) -m pytest -q -p no:cacheprovider tests/e2e/test_fault_matrix.py \
		tests/e2e/test_fault_kill.py tests/e2e/test_failover.py
	$(Q)BOOTCCM_FAULT_SOAK=1 BOOTCCM_FAULT_OUTAGE_S=120 BOOTCCM=$(BUILD)/bootccm \
		$(PYTHON) -m pytest -q -p no:cacheprovider tests/e2e/test_fault_matrix.py -k api_outage

valgrind: glibc
	$(call say,VALGRIND,$(BUILD)/glibc/bootccm)
	$(Q)BUILD=$(BUILD) PYTHON=$(PYTHON) scripts/valgrind.sh

fuzz-long: fuzz
	$(Q)BUILD=$(BUILD) scripts/fuzz-long.sh

install: $(BUILD)/bootccm
	$(call say,INSTALL,$(DESTDIR)$(PREFIX)/bin/bootccm)
	$(Q)install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man8
	$(Q)install -m 0755 $(BUILD)/bootccm $(DESTDIR)$(PREFIX)/bin/bootccm
	$(call say,INSTALL,$(DESTDIR)$(PREFIX)/share/man/man8/bootccm.8)
	$(Q)install -m 0644 docs/bootccm.8 $(DESTDIR)$(PREFIX)/share/man/man8/bootccm.8

clean:
	$(Q)rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
