# syntax=docker/dockerfile:1
# The operator image: `docker build -t aianalysis-operator .`
# tests/integration/test_packaging.py runs this file's pip commands (builder: build backend, locked
# dependency wheels, the operator wheel; runtime: install them into a fresh virtualenv) and starts
# the entrypoint against a real kube-apiserver: no Docker needed to check that what this image would
# run works.
#
# The base image is pinned by digest: python:3.11.15-slim (Debian trixie), the multi-platform index
# published on 2026-08-05 (docker-library/repo-info, repos/python/remote/3.11.15-slim.md). To move
# on, take the new digest of the tag from that record (or `docker buildx imagetools inspect`).
ARG PYTHON_IMAGE=python:3.11.15-slim@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff

# ---- builder: wheels of the project and of every dependency, each checked against the lock ---------
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY requirements/operator.txt requirements/image-build.txt ./requirements/
# The build backend from the lock (hashes required), so the wheel is built with known tools.
RUN python -m pip install --require-hashes --no-deps -r requirements/image-build.txt
# Exactly the locked runtime dependencies: pip refuses any file whose hash is not in the lock. Only
# published wheels: a wheel built here from a source archive would not match the lock's hashes.
RUN python -m pip wheel --require-hashes --no-deps --only-binary=:all: --wheel-dir /wheels \
      -r requirements/operator.txt
COPY pyproject.toml README.md ./
COPY operator ./operator
RUN python -m pip wheel --no-build-isolation --no-deps --wheel-dir /wheels .

# ---- runtime: the wheels installed, nothing else (no compiler, no sources, no pip cache) -------
FROM ${PYTHON_IMAGE}
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# The wheels are bind-mounted from the builder, so they never become a layer of this image; with
# --no-index and --no-deps nothing but those wheels can be installed.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    --mount=type=bind,source=requirements/operator.txt,target=/requirements.txt \
    python -m pip install --no-cache-dir --no-index --no-deps --require-hashes --find-links=/wheels \
      -r /requirements.txt
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    python -m pip install --no-cache-dir --no-index --no-deps --find-links=/wheels aianalysis-operator
# A fixed numeric uid/gid (the chart's runAsUser), so that the kubelet can verify runAsNonRoot.
RUN groupadd --system --gid 65532 aianalysis \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin aianalysis
USER 65532:65532
WORKDIR /tmp
# 9090: Prometheus /metrics (AIANALYSIS_METRICS_PORT); 8080: /healthz and /readyz (AIANALYSIS_HEALTH_PORT).
EXPOSE 9090 8080
# The console script runs kopf on the aianalysis.controller.handlers module (never a file path); the Helm chart
# appends `--namespace=NS` arguments when it should watch only some namespaces.
ENTRYPOINT ["aianalysis", "run"]
