# capsule: the agent container. Multi-stage: wheels are installed into a venv in the build
# stage; the runtime stage carries the venv, the shims and a non-root `agent` user.
#   docker build -t capsule:dev .                                   (python slim base, PyPI)
#   docker build --build-arg BASE_IMAGE=capsule-base:bookworm \
#                --build-arg WHEELHOUSE=wheelhouse -t capsule:dev .  (offline: scripts/setup-docker.sh)
#   --build-arg AGENT_CLIS="" leaves out the agent CLIs (shell roles only; the offline test image)
ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS build
LABEL capsule.stage=build
ARG WHEELHOUSE=
COPY . /src
RUN python3 -m venv /opt/capsule/venv \
 && if [ -n "$WHEELHOUSE" ]; then \
      /opt/capsule/venv/bin/pip install --no-cache-dir --no-index --find-links "/src/$WHEELHOUSE" capsule; \
    else \
      /opt/capsule/venv/bin/pip install --no-cache-dir /src; \
    fi \
 && /opt/capsule/venv/bin/capsule shims install /opt/capsule/shims --socket /state/context/engine.sock

FROM ${BASE_IMAGE}
# Agent CLIs from npm for the claude and codex roles; AGENT_CLIS="" builds a shell-agent image
# (the offline CI image). Kept above the venv so it caches.
ARG AGENT_CLIS="@anthropic-ai/claude-code @openai/codex"
RUN if ! command -v git >/dev/null 2>&1; then \
      apt-get update && apt-get install -y --no-install-recommends git procps \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
 && if [ -n "$AGENT_CLIS" ]; then \
      if ! command -v npm >/dev/null 2>&1; then \
        apt-get update && apt-get install -y --no-install-recommends nodejs npm ca-certificates \
        && rm -rf /var/lib/apt/lists/*; \
      fi; \
      npm install -g --no-fund --no-audit $AGENT_CLIS && npm cache clean --force; \
    fi \
 && if ! command -v pdftotext >/dev/null 2>&1 || ! command -v tesseract >/dev/null 2>&1; then \
      { apt-get update && apt-get install -y --no-install-recommends poppler-utils tesseract-ocr tesseract-ocr-eng \
        && rm -rf /var/lib/apt/lists/*; } \
      || echo "capsule: poppler-utils/tesseract-ocr not installed: PDFs are read by pypdf, screenshots not OCRed"; \
    fi \
 && useradd --create-home --uid 1000 --shell /bin/bash agent \
 && mkdir -p /state/context /workspace /etc/capsule \
 && chown agent:agent /state/context /workspace
COPY --from=build /opt/capsule /opt/capsule
COPY image/profile.sh /etc/profile.d/capsule.sh
COPY image/gitconfig /etc/gitconfig
ENV PATH=/opt/capsule/shims:/opt/capsule/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    JACKIN_CTX_STATE_DIR=/state/context \
    JACKIN_CTX_SOCKET=/state/context/engine.sock \
    LANG=C.UTF-8
USER agent
WORKDIR /workspace
VOLUME ["/state/context"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/opt/capsule/venv/bin/capsule", "supervise"]
CMD []
