# shortflow — one command to install and run the demo, one to install and run every test.
#   make demo   installs what is needed, then runs the main job on built-in data
#   make test   installs what is needed, then runs every test (Rust and Python)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Debian packages: the real peers (tshark, tcptrace), capture and namespace tools for the
# real-kernel tests, clang for the BPF program (bpftool: the tests' peer that reads what the
# loader did), Debian's chromium for the report's test, and for `watch`'s tests a real
# Prometheus and tcpreplay (load replayed onto a veth).
DEB_PACKAGES := tshark tcptrace tcpdump chromium iproute2 iptables nftables clang llvm libbpf-dev bpftool nginx-light curl prometheus tcpreplay

# Only for `make bench`: ns-3, the simulator's peer (and what its pkg-config links need).
BENCH_DEB_PACKAGES := libns3-dev libgsl-dev libsqlite3-dev pkg-config g++

.PHONY: all demo test deps bench-deps venv build test-rust test-python lint lint-rust lint-python bench bench-sim bench-web fuzz mutants clean
FUZZ_SECONDS ?= 120

all: build

deps: .deps-stamp
.deps-stamp:
	@missing=""; for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  echo "wireshark-common wireshark-common/install-setuid boolean false" | $$SUDO debconf-set-selections; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	  case " $$missing " in *" prometheus "*) \
	    echo "the tests start their own Prometheus: the service the package enabled is stopped and disabled"; \
	    $$SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true;; esac; \
	fi
	@touch $@

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip

venv: $(VENV)/bin/python

# Builds the Rust core into the package and installs it with its Python dependencies.
build: deps venv
	$(VENV)/bin/pip install -q 'maturin>=1.9,<2'
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop -q --release --extras test
	# The testbed's link emulator runs as its own process in the router namespace.
	cargo build --release -q -p shortflow-netem
	# `shortflow synopt` execs the SYN optimizer daemon (and its flood test the generator).
	cargo build --release -q -p shortflow-synopt
	# The package is installed in place (development mode): its bytecode is compiled here,
	# as pip compiles a wheel's, so that no command compiles it again where Python is told
	# not to write it (PYTHONDONTWRITEBYTECODE, common in containers): 20-30 ms a command.
	$(VENV)/bin/python -m compileall -q python/shortflow
	@test -x $(VENV)/bin/shortflow

demo: build
	$(VENV)/bin/shortflow demo

test: build test-rust test-python

test-rust:
	cargo test --workspace --release -q

test-python: build
	$(PY) -m pytest -q tests

# As strict as the tools: rustfmt's layout (rustfmt.toml: 130 columns, as ruff's), clippy
# with warnings as errors, mypy --strict and ruff (their settings in pyproject.toml; mypy
# and ruff come with the package's test extras).
lint: lint-rust lint-python

lint-rust:
	@command -v rustup >/dev/null && rustup component add clippy rustfmt >/dev/null 2>&1 || true
	cargo fmt --all -- --check
	cargo clippy --workspace --release --all-targets -q -- -D warnings

lint-python: build
	$(VENV)/bin/mypy
	$(VENV)/bin/ruff check python tests benches

bench: build bench-sim bench-web
	$(PY) benches/run.py

bench-deps:
	@missing=""; for p in $(BENCH_DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# The simulator beside ns-3 (100,000 sequential short transfers).
bench-sim: build bench-deps
	$(PY) benches/sim_vs_ns3.py

# PackMime-HTTP over a 50-pair dumbbell, shortflow's flow list replayed in ns-3.
bench-web: build bench-deps
	$(PY) benches/sim_vs_ns3.py --web

# Mutation check, bounded to a few files (minutes each on 2 cores; figures in BENCHMARKS.md):
# cargo-mutants over the analyzer's RTO ladder and the simulator's RTO estimator, cosmic-ray
# over tune's settings rules. Outcomes in target/mutants/ and /tmp.
mutants: build
	cargo install -q --locked cargo-mutants
	$(VENV)/bin/pip install -q 'cosmic-ray>=8.4'  # pyproject.toml's `mutation` extra
	cargo mutants -p shortflow-trace -f crates/trace/src/diag/ladder.rs -j 1 --timeout 180 -o target/mutants/ladder
	cargo mutants -p shortflow-sim -f crates/sim/src/tcp/rtte.rs -j 1 --timeout 180 -o target/mutants/rtte
	benches/mutation/run.sh tune-settings.toml

# Each parser's fuzz target (pcap, pcapng, scenario files, tmix vector files) for FUZZ_SECONDS, starting from the committed seeds.
fuzz:
	cargo install -q cargo-fuzz
	cd crates/trace/fuzz && for t in read_pcap read_pcapng decode_icmp; do \
	  mkdir -p corpus/$$t && cargo +nightly fuzz run $$t corpus/$$t seeds/$$t -- -max_total_time=$(FUZZ_SECONDS) -max_len=8192 || exit 1; \
	done
	cd crates/sim/fuzz && for t in scenario abt; do \
	  mkdir -p corpus/$$t && cargo +nightly fuzz run $$t corpus/$$t seeds/$$t -- -max_total_time=$(FUZZ_SECONDS) -max_len=4096 || exit 1; \
	done

clean:
	rm -rf target $(VENV) .deps-stamp out
