# syntax=docker/dockerfile:1
# The operator image: `docker build -t aianalysis-operator .`
# tests/integration/test_packaging.py runs this file's two pip commands (wheel, then install into a
# fresh virtualenv) and starts the entrypoint against a real kube-apiserver: no Docker needed to
# check that what this image would run works.
ARG PYTHON_IMAGE=python:3.11-slim

# ---- builder: wheels of the project and of every dependency --------------------------------------
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator ./operator
RUN python -m pip wheel --wheel-dir /wheels .

# ---- runtime: the wheels installed, nothing else (no compiler, no sources, no pip cache) -------
FROM ${PYTHON_IMAGE}
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# The wheels are bind-mounted from the builder, so they never become a layer of this image.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    python -m pip install --no-cache-dir --no-index --find-links=/wheels aianalysis-operator
# A fixed numeric uid/gid (the chart's runAsUser), so that the kubelet can verify runAsNonRoot.
RUN groupadd --system --gid 65532 aianalysis \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin aianalysis
USER 65532:65532
WORKDIR /tmp
# 9090: Prometheus /metrics (AIANALYSIS_METRICS_PORT); 8080: kopf's /healthz (AIANALYSIS_HEALTH_PORT).
EXPOSE 9090 8080
# The console script runs kopf on the aianalysis.handlers module (never a file path); the Helm chart
# appends `--namespace=NS` arguments when it should watch only some namespaces.
ENTRYPOINT ["aianalysis", "run"]
