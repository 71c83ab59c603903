# capsule: the agent container. Multi-stage: wheels are installed into a venv in the build
# stage; the runtime stage carries Node.js and the agent CLIs, the venv, the shims and an `agent`
# user that `capsule up` maps to the workspace owner (capsule/supervisor/identity.py). The venv has
# capsule[fleet], so the same image is the fleet-sync sidecar (the engine never imports it).
#   docker build -t capsule:dev .        (python slim base; the CLIs pinned in image/agent-clis.toml, from npm)
#   scripts/setup-docker.sh              (offline: debootstrap base with nodejs + the host's CLIs,
#                                         then --build-arg BASE_IMAGE=capsule-agents:bookworm
#                                         --build-arg WHEELHOUSE=wheelhouse --build-arg AGENT_CLIS=)
#   --build-arg AGENT_CLIS="" installs no CLI (those of the base are kept); AGENT_CLIS="pkg@v …"
#   installs those instead of the pins.
ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS build
LABEL capsule.stage=build
ARG WHEELHOUSE=
# A C compiler for this stage only: `capsule shims install` builds the compiled shims (static, so
# the runtime stage needs no compiler or libc headers); without one the Python shims are installed.
RUN if ! command -v cc >/dev/null 2>&1; then \
      { apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
        && rm -rf /var/lib/apt/lists/*; } \
      || echo "capsule: no C compiler in the build stage: the image gets the Python shims"; \
    fi
COPY . /src
RUN python3 -m venv /opt/capsule/venv \
 && if [ -n "$WHEELHOUSE" ]; then \
      /opt/capsule/venv/bin/pip install --no-cache-dir --no-index --find-links "/src/$WHEELHOUSE" "capsule[fleet]"; \
    else \
      /opt/capsule/venv/bin/pip install --no-cache-dir "/src[fleet]"; \
    fi \
 && /opt/capsule/venv/bin/capsule shims install /opt/capsule/shims --socket /state/context/engine.sock

FROM ${BASE_IMAGE}
# Agent CLIs from npm at the pinned versions; kept above the venv so it caches. Those already in
# the base at their pinned version are not installed again. `missing` also names node@VERSION
# ([node] in agent-clis.toml) when the base's node is older than Gemini CLI needs (Debian's is 18):
# that npm package ships the binary and puts it in /usr/local/bin, ahead of /usr/bin on PATH.
ARG AGENT_CLIS=pinned
COPY image/agent-clis.toml image/agent_clis.py /opt/capsule/image/
RUN if ! command -v git >/dev/null 2>&1; then \
      apt-get update && apt-get install -y --no-install-recommends git procps \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
 && specs="$AGENT_CLIS" \
 && if [ "$specs" = pinned ]; then specs="$(python3 /opt/capsule/image/agent_clis.py missing)"; fi \
 && if [ -n "$specs" ]; then \
      if ! command -v npm >/dev/null 2>&1; then \
        apt-get update && apt-get install -y --no-install-recommends nodejs npm ca-certificates \
        && rm -rf /var/lib/apt/lists/*; \
      fi; \
      npm install -g --no-fund --no-audit $specs && npm cache clean --force; \
    fi \
 && if ! command -v pdftotext >/dev/null 2>&1 || ! command -v tesseract >/dev/null 2>&1; then \
      { apt-get update && apt-get install -y --no-install-recommends poppler-utils tesseract-ocr tesseract-ocr-eng \
        && rm -rf /var/lib/apt/lists/*; } \
      || echo "capsule: poppler-utils/tesseract-ocr not installed: PDFs are read by pypdf, screenshots not OCRed"; \
    fi \
 && useradd --create-home --uid 1000 --shell /bin/bash agent \
 && mkdir -p /state/context /workspace /etc/capsule \
 && chown agent:agent /state/context /workspace \
 && chmod 700 /state/context
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
