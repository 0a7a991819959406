# sago-bench — every target that runs the benchmark is a thin wrapper over one of its entry points: the
# `sago` CLI (see `sago --help`) or a `python -m benchmark.<module>` script (harness.reproduce, and the
# performance tools of benchmark/tools/: gpu_check, bench_engines, bench_peer, bench_floor,
# scoring_accuracy). They share one error path (benchmark/entry.py): a bad option or bad input is
# one line on stderr and exit status 2. The other targets install, lint and test.
# Everything runs in a project virtual environment (.venv), created by `make install` (and so by
# `make all` / `make check`): many distributions refuse pip installs into the system Python.
# PY=python3 runs the targets with an interpreter that already has the package installed instead.
SYSTEM_PY ?= python3
VENV ?= .venv
# Extra `python -m venv` flags, e.g. --system-site-packages to reuse an installed torch.
VENV_FLAGS ?=
PY ?= $(VENV)/bin/python
SAGO ?= $(PY) -m benchmark
SET ?= sago-v1
# New builds and evaluations use v2; so does the published board (and `make all`): the v2 evidence results.
# v1's smoke board is kept at leaderboard/versions/sago-v1/v1/leaderboard.json.
VERSION ?= v2
BOARD_VERSION ?= v2
# The published hashes (README): `make all` refuses any other set.
V1_SHA256 ?= f1ec4540ba799cfe4d8c8365d13e1de2cd0b17414e7c5fcb1d424404ad50658b
V2_SHA256 ?= dc0e25db066996cd35282735deb5dc9e5d211ee5d3e8f8d9b13a3d5a86df4891
PROFILE ?= smoke
# How `make all` proves the committed results. SAMPLE=K re-runs K seeded baseline batches and K variant
# batches of each (their committed composition) instead of the whole run: hours of evidence cannot be
# re-run in the main job's 30 minutes (empty: re-run everything). Each version's board profile (v2:
# evidence; benchmark/profiles.py BOARD_PROFILES) is the run in results/<set>/<version>/, and
# benchmark.harness.reproduce defaults to it; a run of another profile is in <version>-<profile>/.
# PROFILE_SAMPLE: batches of each committed run of another profile (the paper profile's batches are
# about twice as slow, 100 tokens).
SAMPLE ?= 2
PROFILE_SAMPLE ?= 1
SEED ?= 0
MODEL ?=
# The default submissions `make all` re-runs and diffs with their committed results (every committed
# result is analysed and rebuilt into the site).
ALL_MODELS ?= huggingfacetb__smollm2-135m-instruct-q4_1 google__gemma-3-270m-q4_k_m qwen__qwen2.5-coder-0.5b-instruct-q4_k_m qwen__qwen2.5-coder-1.5b-instruct-q4_k_m
# Committed finished runs of other profiles of the board version (submissions/<slug>/results/<set>/<version>-<profile>/run.json),
# as <slug>/<profile>; `make all` samples, analyses and publishes each profile as a board of its own.
PROFILE_RUNS := $(foreach run,$(wildcard $(foreach m,$(ALL_MODELS),submissions/$(m)/results/$(SET)/$(BOARD_VERSION)-*/run.json)),$(word 2,$(subst /, ,$(run)))/$(patsubst $(BOARD_VERSION)-%,%,$(word 5,$(subst /, ,$(run)))))
OTHER_PROFILES := $(sort $(foreach run,$(PROFILE_RUNS),$(word 2,$(subst /, ,$(run)))))
# One torch thread per model run: the committed results were made this way, and float reductions
# (hence, rarely, a greedy token) depend on the thread count. `make all` runs the models side by side.
THREADS ?= 1
JOBS ?= 2
# A pull request's base commit (e.g. origin/main): `make check` / `make validate` then also refuse any
# change the pull request makes besides one new submission's submission.yaml and README.md, judged by the
# base commit's own validator and gate script (.ci/gate), never the pull request's.
BASE ?=
BENCH_VENV ?= .bench-venv

.PHONY: quickstart all check lint setup browser reproduce recompute install venv evaluate analyze leaderboard variants variants-verify validate \
	llama-server rewrite api-smoke \
	bench bench-peer bench-floor model-facts scoring-accuracy float64-bound peer-venv test-lm-eval bench-gpu gpu-check wheelhouse test test-fast example-fixture

# `make quickstart`: a first result of one's own, in a git-ignored scratch folder (never submissions/).
QUICKSTART ?= .scratch/quickstart
QUICKSTART_MODEL ?= huggingfacetb__smollm2-135m-instruct-q4_1
QUICKSTART_DATASETS ?= trivia_qa

quickstart: install  ## first result of your own: packaged SmolLM2, bench profile, one dataset, into .scratch/quickstart/ (results, leaderboard.json, site/); the committed board is untouched
	$(SAGO) evaluate $(QUICKSTART_MODEL) --out $(QUICKSTART) --set $(SET) --version $(VERSION) --profile bench --datasets $(QUICKSTART_DATASETS) --threads $(THREADS)
	$(SAGO) analyze --set $(SET) --version $(VERSION) --profile bench --submissions-dir $(QUICKSTART)/submissions --out $(QUICKSTART)/leaderboard.json
	$(SAGO) leaderboard build --set $(SET) --version $(VERSION) --input $(QUICKSTART)/leaderboard.json --submissions $(QUICKSTART)/submissions --out $(QUICKSTART)/site
	@echo "your result: $(QUICKSTART)/submissions/$(QUICKSTART_MODEL)/results/$(SET)/$(VERSION)-bench/ (records/*.parquet, run.json)"
	@echo "your board:  $(QUICKSTART)/leaderboard.json; your site: $(QUICKSTART)/site/index.html"

all: setup  ## main job on a fresh machine: re-run the default submissions (CPU), diff them with the committed results, analyze, build the site
	$(SAGO) variants verify --set $(SET) --version v1 --expected-sha256 $(V1_SHA256)
	$(SAGO) variants verify --set $(SET) --version v2 --expected-sha256 $(V2_SHA256)
	$(MAKE) --no-print-directory -j$(JOBS) $(addprefix reproduce-one/,$(ALL_MODELS)) $(addprefix reproduce-profile/,$(PROFILE_RUNS))
	$(SAGO) analyze --set $(SET) --version $(BOARD_VERSION)
	$(foreach p,$(OTHER_PROFILES),$(SAGO) analyze --set $(SET) --version $(BOARD_VERSION) --profile $(p) &&) true
	$(SAGO) leaderboard build --set $(SET) --version $(BOARD_VERSION)
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	  if [ -z "$$(git status --porcelain -- leaderboard submissions)" ]; then \
	    echo "summaries, leaderboard.json and leaderboard/site/ equal the committed files"; \
	  else git status --short -- leaderboard submissions; echo "the files above differ from the committed ones (or are new)"; exit 1; fi; \
	fi
	@echo "site: leaderboard/site/index.html"

check: setup llama-server  ## the test command on a fresh machine: lint, validate submissions (BASE=ref: the PR gate), then the whole test suite
	$(MAKE) --no-print-directory lint PY=$(PY)
	$(MAKE) --no-print-directory validate PY=$(PY)
	$(PY) -m pytest -q

lint:  ## ruff (E, W, F, I, B, UP, SIM; 110 columns) on the package and tests, mypy --strict on the package
	$(PY) -m ruff check benchmark tests
	$(PY) -m ruff format --check benchmark tests
	$(PY) -m mypy

setup: install browser

browser:  ## Debian's Chromium for the browser tests (skipped when already present)
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium chromium-driver)

venv: $(VENV)/bin/python

$(VENV)/bin/python:
	$(SYSTEM_PY) -m venv $(VENV_FLAGS) $(VENV)

install: venv  ## create .venv and install pinned dependencies (torch CPU wheel from this machine's disk) and the package
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'

evaluate:  ## evaluate every submission without results (or MODEL=slug) on PROFILE, then analyze that profile's board (a profile other than the version's board profile goes to results/<set>/<version>-<profile>/)
	$(SAGO) evaluate $(if $(MODEL),$(MODEL),--pending) --set $(SET) --version $(VERSION) --profile $(PROFILE) --threads $(THREADS)
	$(SAGO) analyze --set $(SET) --version $(VERSION) --profile $(PROFILE)

reproduce-one/%:  ## re-run one committed board-profile result with its own settings into a temporary folder and diff it (used by `make all`)
	$(PY) -m benchmark.harness.reproduce $* --set $(SET) --version $(BOARD_VERSION) \
		$(if $(SAMPLE),--sample $(SAMPLE) --seed $(SEED))

reproduce-profile/%:  ## the same for a committed run of another profile, named <slug>/<profile> (used by `make all`)
	$(PY) -m benchmark.harness.reproduce $(firstword $(subst /, ,$*)) --profile $(lastword $(subst /, ,$*)) \
		--set $(SET) --version $(BOARD_VERSION) $(if $(PROFILE_SAMPLE),--sample $(PROFILE_SAMPLE) --seed $(SEED))

evaluate-one/%:  ## re-evaluate one submission from scratch, replacing its results
	$(SAGO) evaluate $* --force --set $(SET) --version $(VERSION) --profile $(PROFILE) --threads $(THREADS)

analyze:
	$(SAGO) analyze --set $(SET) --version $(BOARD_VERSION)

leaderboard:  ## render the static site into leaderboard/site/
	$(SAGO) leaderboard build --set $(SET) --version $(BOARD_VERSION)

variants:  ## rebuild the frozen variant set from pinned sources (byte-identical)
	$(SAGO) variants build --set $(SET) --version $(VERSION)

llama-server:  ## build llama.cpp's server from the pinned llama-cpp-python sdist (`make rewrite`, the API tests and `make api-smoke`; minutes, once)
	$(SAGO) variants llama-server

API_SLUG ?= huggingfacetb__smollm2-135m-instruct-q4_1-llama-server
api-smoke: setup llama-server  ## the API path end to end: serve the packaged SmolLM2 with llama-server on :8094, evaluate it as an api submission (smoke), validate, analyze, build the site (~15 min)
	$(SAGO) serve smollm2-135m-instruct-q4_1 --port 8094 -- sago evaluate $(API_SLUG) --profile smoke --version v2 $(if $(FORCE),--force)
	$(SAGO) submissions validate
	$(SAGO) analyze --set $(SET) --version $(BOARD_VERSION)
	$(SAGO) leaderboard build --set $(SET) --version $(BOARD_VERSION)
	@echo "API table: leaderboard/api_models.json, leaderboard/site/api.html"

rewrite: llama-server  ## grow a model-rewrite log for cells a written file lacks (resumable; REWRITER_MODEL, LLM_ITEMS, ATTEMPTS)
	$(SAGO) variants rewrite --set $(SET) --version $(VERSION) --llm-items $(or $(LLM_ITEMS),16) \
		--log $(or $(LOG),.cache/rewrites/$(SET)-$(VERSION).jsonl) --rewriter llamacpp --threads 2 --attempts $(or $(ATTEMPTS),6) \
		--rewriter-model $(or $(REWRITER_MODEL),qwen2.5-coder-1.5b-instruct-q4_k_m)

variants-verify:
	$(SAGO) variants verify --set $(SET) --version $(VERSION)

validate:  ## every submission; with BASE=ref also the pull-request gate, the base's own .ci/gate (a pull request's own Makefile decides nothing in CI: .ci/run and the workflow pipe the base's script themselves)
	$(if $(BASE),git show '$(BASE):.ci/gate' | bash -s -- '$(BASE)' '$(if $(findstring /,$(PY)),$(abspath $(PY)),$(PY))',$(SAGO) submissions validate)

bench:  ## harness overhead vs bare model work, CPU, SmolLM2
	$(SAGO) bench --model huggingfacetb__smollm2-135m-instruct-q4_1 --profile bench --threads $(THREADS)

reproduce:  ## re-run one committed result (MODEL=<slug> PROFILE=<name>) into a temp dir and diff it with the committed files
	$(PY) -m benchmark.harness.reproduce $(MODEL) --profile $(PROFILE) --set $(SET) --version $(or $(RESULT_VERSION),$(BOARD_VERSION)) $(ARGS)

recompute:  ## recompute every committed result's deltas from its records and compare (make check samples 4 items per dataset)
	SAGO_RECOMPUTE_ALL=1 $(PY) -m pytest -q tests/test_committed_results.py -k test_deltas_recompute_from_records

peer-venv:  ## .bench-venv: sago-bench with lm-evaluation-harness pinned (the `peer` extra), never in .venv
	test -x $(BENCH_VENV)/bin/python || $(SYSTEM_PY) -m venv --system-site-packages $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install -q torch==2.13.0 -e '.[peer]'

bench-peer: peer-venv  ## `sago bench` vs lm-evaluation-harness generate_until on the same prompts (own venv .bench-venv)
	$(BENCH_VENV)/bin/python -m benchmark.tools.bench_peer --threads $(THREADS) $(ARGS)

bench-floor:  ## least time the pooled engine's matrix products can take here (ARGS=--model SLUG --batch-size N --peer-seconds S)
	$(PY) -m benchmark.tools.bench_floor $(ARGS)

model-facts:  ## leaderboard/model_facts.json from the packaged models' files: lineage, bits per weight, context, the exact prompt (system turn)
	$(PY) -m benchmark.tools.model_facts

scoring-accuracy:  ## the pooled engine's screened scoring pass against float64 on real rows (ARGS=--model SLUG --positions N)
	$(PY) -m benchmark.tools.scoring_accuracy $(ARGS)

float64-bound:  ## the committed results' float32 error against a float64 re-run of `make all`'s sampled batches: the reproduce tolerances' measurement (hours on one core)
	$(PY) -m benchmark.tools.float64_bound $(ALL_MODELS) --profile evidence --set $(SET) --version $(BOARD_VERSION) \
		--sample $(or $(SAMPLE),2) --seed $(SEED) --out docs/bench/float64-bound.json

test-lm-eval: peer-venv  ## the README's lm-eval block for real: export, lm_eval on SmolLM2 (GGUF, offline), import, compare with sago
	SAGO_LM_EVAL_PYTHON=$(BENCH_VENV)/bin/python $(PY) -m pytest -q -m slow tests/test_lmeval_slow.py

wheelhouse:  ## every pinned wheel (project, dependencies, packaged models) for one Python/platform into wheelhouse/ (ARGS="--python-version 3.12 --dry-run")
	$(PY) -m benchmark.tools.wheelhouse $(ARGS)

gpu-check:  ## one script on one GPU: bench-gpu on 1B/8B shapes, engines vs generate at the planned batch, SmolLM2 vs committed CPU records; writes docs/bench/gpu-check-<device>.json (ARGS=--dry-run on a CPU)
	$(PY) -m benchmark.tools.gpu_check $(ARGS)

bench-gpu:  ## random-init 1B/8B Llama shapes on a GPU: prompts/s, tokens/s, memory, MFU (ARGS=--dry-run on a CPU)
	$(PY) -m benchmark.tools.bench_engines $(ARGS)

test:  ## every test but the GPU ones: adds the slow (packaged models and data) and browser tiers
	$(PY) -m pytest -q

test-fast:  ## no model weights, no browser, no GPU: under 3 minutes on 2 quiet cores (docs/ARCHITECTURE.md)
	$(PY) -m pytest -q -m 'not slow and not browser and not gpu'

example-fixture:  ## regenerate tests/fixtures/leaderboard_example.json (synthetic deltas, real statistics)
	$(PY) -m tests.helpers.leaderboard_example tests/fixtures/leaderboard_example.json
