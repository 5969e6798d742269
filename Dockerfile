# The image the Helm chart (charts/graphq) runs: graphq with its example workflows and, optionally, your
# workflow packages, in a virtualenv owned by root (/opt/graphq), run as the unprivileged user graphq
# (uid/gid 10001, the chart's podSecurityContext). `graphq` is the entry point:
#
#   docker build -t graphq:0.1.0 .
#   docker run --rm -e GRAPHQ_REDIS_URL=redis://host:6379/0 graphq:0.1.0 worker --concurrency 2
#
# Your workflows: WORKFLOW_PACKAGES is passed to pip after graphq, so it takes registry names or paths in
# this build context (a package that registers its graphs under the `graphq.workflows` entry point, or
# set GRAPHQ_WORKFLOWS / the chart's config.workflows to its modules):
#
#   docker build -t myflows:1.0 --build-arg WORKFLOW_PACKAGES="./myflows" .
ARG PYTHON_VERSION=3.12

FROM python:${PYTHON_VERSION}-slim AS build
# A compiler, for a dependency or workflow package without a wheel for this Python (graphq's own have wheels).
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
ARG WORKFLOW_PACKAGES=""
RUN python -m venv /opt/graphq \
    && /opt/graphq/bin/pip install --no-cache-dir --upgrade pip \
    && /opt/graphq/bin/pip install --no-cache-dir . ${WORKFLOW_PACKAGES}

FROM python:${PYTHON_VERSION}-slim
LABEL org.opencontainers.image.title="graphq" \
      org.opencontainers.image.description="Durable, distributed graph workflows on Redis and RQ" \
      org.opencontainers.image.licenses="Apache-2.0"
# The code is byte-compiled at install: nothing is written under /opt at run time (read-only root file
# system); the embedded Redis of `graphq run` without a URL keeps its files under /tmp.
ENV PATH="/opt/graphq/bin:${PATH}" \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    GRAPHQ_DATA_DIR=/tmp/graphq
RUN groupadd --system --gid 10001 graphq \
    && useradd --system --uid 10001 --gid graphq --home-dir /home/graphq --create-home \
       --shell /usr/sbin/nologin graphq
COPY --from=build /opt/graphq /opt/graphq
USER 10001:10001
WORKDIR /home/graphq
ENTRYPOINT ["graphq"]
CMD ["--help"]
