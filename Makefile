# Two commands for a newcomer: `make demo` and `make test`. Both install what they need.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The operator as the image installs it (runtime dependencies alone): what `make bench` measures.
OPERATOR_VENV := .venv-operator
OPERATOR_STAMP := $(OPERATOR_VENV)/.installed
UV = $(shell hack/install-uv.sh)/bin/uv
K8S_BIN = $(shell hack/build-k8s.sh)
HELM_BIN = $(shell hack/build-helm.sh)
ALERTMANAGER_BIN = $(shell hack/build-alertmanager.sh)
KUBE_SCORE_BIN = $(shell hack/build-kube-score.sh)
PROMTOOL_BIN = $(shell hack/build-promtool.sh)
PROMETHEUS_BIN = $(shell hack/build-prometheus.sh)
CONTAINERD_BIN = $(shell hack/build-containerd.sh)
NODE_DEBS = $(shell hack/build-node-debs.sh)
# Bytecode is written (the venvs are compiled at install, our own packages on first import): the
# suite starts ~250 Python processes, and each would otherwise compile ~500 modules from source
# (~1 s of CPU apiece). __pycache__ is ignored by git.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: all venv lock deps chromium k8s node helm alertmanager kube-score promtool prometheus image workflow-images manifests lint typecheck contracts unit docs test demo bench clean

all: test

# Exactly the locked versions (hashes checked), nothing else; then the two local packages, editable.
$(STAMP): requirements/dev.txt requirements/image-build.txt pyproject.toml devtools/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	"$(UV)" pip sync --quiet --compile-bytecode --python $(PY) --require-hashes requirements/dev.txt
	"$(UV)" pip install --quiet --python $(PY) --no-deps --build-constraints requirements/image-build.txt \
	    -e . -e ./devtools
	"$(UV)" pip check --quiet --python $(PY)
	touch $(STAMP)

venv: $(STAMP)

$(OPERATOR_STAMP): requirements/operator.txt requirements/image-build.txt pyproject.toml
	test -x $(OPERATOR_VENV)/bin/python || $(PYTHON) -m venv $(OPERATOR_VENV)
	"$(UV)" pip sync --quiet --compile-bytecode --python $(OPERATOR_VENV)/bin/python --require-hashes requirements/operator.txt
	"$(UV)" pip install --quiet --python $(OPERATOR_VENV)/bin/python --no-deps \
	    --build-constraints requirements/image-build.txt -e .
	touch $(OPERATOR_STAMP)

lock:  ## re-resolve requirements/ after a change to pyproject.toml (UPGRADE=1: newest allowed versions)
	hack/lock.sh $(if $(UPGRADE),--upgrade)

deps: venv  ## the lock matches pyproject.toml; every imported module is declared, no declared one unused
	hack/lock.sh --check
	$(VENV)/bin/deptry operator
	$(VENV)/bin/deptry tests bench --exclude '\.venv' --ignore DEP002,DEP004
	cd devtools && ../$(VENV)/bin/deptry aianalysis_dev

k8s:  ## build (or reuse) kube-apiserver, etcd, kubectl, kube-controller-manager, kubelet, kube-scheduler, kube-proxy from Go modules
	hack/build-k8s.sh

node: k8s  ## the real node's other parts: containerd + pause (Go modules), runc, CNI plugins, busybox, nft (the distribution's packages)
	hack/build-containerd.sh
	hack/build-node-debs.sh

helm:  ## build (or reuse) the helm CLI from Go modules (chart tests)
	hack/build-helm.sh

alertmanager:  ## build (or reuse) Alertmanager from Go modules (the intake's end-to-end test)
	hack/build-alertmanager.sh

kube-score:  ## build (or reuse) kube-score from Go modules (chart tests)
	hack/build-kube-score.sh

promtool:  ## build (or reuse) promtool from Go modules (alert rule tests)
	hack/build-promtool.sh

prometheus:  ## unpack (or reuse) a Prometheus server from the distribution's package (Prometheus tools' tests, bench)
	hack/build-prometheus.sh

image: venv  ## build (or reuse) the operator image as an OCI image-layout tar, without Docker (needs root)
	hack/build-image.sh operator --json

workflow-images: venv  ## build (or reuse) the example workflows' images (busybox + kubectl + a script)
	AIANALYSIS_K8S_BIN="$(K8S_BIN)" hack/build-image.sh workflows

chromium:  ## Debian's chromium for the console's browser tests (apt, only when /usr/bin/chromium is missing)
	hack/install-chromium.sh >/dev/null

manifests: venv  ## re-render deploy/ (kustomize base) and the chart's crds/ from the chart and crds/
	$(PY) hack/helm/render_deploy.py --helm "$(HELM_BIN)/helm"

lint: venv
	$(VENV)/bin/ruff check operator devtools tests bench hack
	$(VENV)/bin/ruff format --check operator devtools tests bench hack

typecheck: venv
	$(VENV)/bin/mypy

contracts: venv
	$(VENV)/bin/lint-imports

unit: venv
	$(VENV)/bin/pytest tests/unit -q

docs: venv  ## the documentation site (mkdocs.yml, docs/ + generated reference pages) into build/site, warnings fail
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# Workers: the suite mostly waits (on API servers, operators, kubelets), so more workers than cores pay.
TEST_WORKERS ?= 3

test: venv lint typecheck contracts deps docs chromium
	AIANALYSIS_K8S_BIN="$(K8S_BIN)" AIANALYSIS_HELM_BIN="$(HELM_BIN)" \
	AIANALYSIS_ALERTMANAGER_BIN="$(ALERTMANAGER_BIN)" \
	AIANALYSIS_KUBE_SCORE_BIN="$(KUBE_SCORE_BIN)" AIANALYSIS_PROMTOOL_BIN="$(PROMTOOL_BIN)" \
	AIANALYSIS_PROMETHEUS_BIN="$(PROMETHEUS_BIN)" \
	AIANALYSIS_CONTAINERD_BIN="$(CONTAINERD_BIN)" AIANALYSIS_NODE_DEBS="$(NODE_DEBS)" \
	    $(VENV)/bin/pytest -q -ra --durations=15 -n $(TEST_WORKERS) --dist loadfile

# As root the demo runs on a real node (its parts are built once, like the control plane's); else,
# or with AIANALYSIS_DEMO_WORLD=simulated, in the simulated world, saying why.
demo: venv
	AIANALYSIS_K8S_BIN="$(K8S_BIN)" \
	$(if $(filter 0,$(shell id -u)),$(if $(filter simulated,$(AIANALYSIS_DEMO_WORLD)),,\
	    AIANALYSIS_CONTAINERD_BIN="$(CONTAINERD_BIN)" AIANALYSIS_NODE_DEBS="$(NODE_DEBS)")) \
	    $(VENV)/bin/aianalysis demo

bench: venv $(OPERATOR_STAMP)
	AIANALYSIS_K8S_BIN="$(K8S_BIN)" AIANALYSIS_PROMETHEUS_BIN="$(PROMETHEUS_BIN)" \
	AIANALYSIS_OPERATOR_PYTHON="$(OPERATOR_VENV)/bin/python" $(PY) -m bench

clean:
	rm -rf $(VENV) $(OPERATOR_VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info operator/*.egg-info devtools/*.egg-info
