#!/usr/bin/env bash
# Prepare a real Docker engine and the capsule image, offline except for PyPI and Debian.
# Idempotent: every step checks before it acts. Run as root (CI is root).
#   1. docker.io + debootstrap from apt (apt-get update first) when missing
#   2. dockerd started when `docker info` fails; waits until it answers
#   3. a Debian bookworm base (python3, git, nodejs) built with debootstrap + `docker import`
#   4. the CLI layer: that base plus the agent CLIs at the versions pinned in image/agent-clis.toml,
#      copied from the host's global npm when it holds that version, else from the pin's own npm
#      prefix (installed there when absent); labels record the versions
#   5. the project's wheels built on the host into ./wheelhouse (same ABI: CPython 3.11)
#   6. `docker build` of the capsule image on the CLI layer from that wheelhouse
# Each image is rebuilt only when its inputs change (a label holds their hash), so CI reuses them.
# Env: CAPSULE_BASE_TAG (capsule-base:bookworm), CAPSULE_AGENTS_TAG (capsule-agents:bookworm),
#      CAPSULE_IMAGE (capsule:dev), CAPSULE_FORCE_REBUILD=1 rebuilds wheels and the image,
#      DEBIAN_MIRROR, CAPSULE_AGENT_CLIS=none builds the image without agent CLIs (shell roles only),
#      NPM_ROOT (default: `npm root -g`) where the host's CLIs are.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE_TAG="${CAPSULE_BASE_TAG:-capsule-base:bookworm}"
AGENTS_TAG="${CAPSULE_AGENTS_TAG:-capsule-agents:bookworm}"
IMAGE="${CAPSULE_IMAGE:-capsule:dev}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PY="${PYTHON:-python3}"
[ -x "$ROOT/.venv/bin/python" ] && PY="$ROOT/.venv/bin/python"
log() { printf '[setup-docker] %s\n' "$*" >&2; }
changed() { log "$*"; [ -n "${CAPSULE_SETUP_LOG:-}" ] && echo "$*" >>"$CAPSULE_SETUP_LOG"; return 0; }

need_apt=()
command -v dockerd >/dev/null 2>&1 || need_apt+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need_apt+=(debootstrap)
if [ "${#need_apt[@]}" -gt 0 ]; then
  changed "apt-get installed ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" iptables ca-certificates >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  changed "started dockerd (left running; log /var/log/dockerd.log)"
  mkdir -p /var/log
  driver_args=()
  # overlay2 needs a filesystem that supports it; fall back to vfs when a first start fails.
  if [ -f /var/lib/docker/.capsule-vfs ]; then driver_args=(--storage-driver=vfs); fi
  start_dockerd() {
    nohup dockerd "${driver_args[@]}" >/var/log/dockerd.log 2>&1 &
    dockerd_pid=$!
    for _ in $(seq 1 60); do
      docker info >/dev/null 2>&1 && return 0
      kill -0 $! 2>/dev/null || return 1
      sleep 1
    done
    return 1
  }
  if ! start_dockerd; then
    log "dockerd did not come up with the default storage driver; retrying with vfs"
    if [ -n "${dockerd_pid:-}" ]; then kill "$dockerd_pid" 2>/dev/null || true; fi; sleep 2
    mkdir -p /var/lib/docker && touch /var/lib/docker/.capsule-vfs
    driver_args=(--storage-driver=vfs)
    start_dockerd || { tail -n 40 /var/log/dockerd.log >&2; exit 1; }
  fi
fi
log "docker: $(docker info --format '{{.ServerVersion}} {{.Driver}}')"

# Debian's nodejs runs Codex's launcher (codex.js); Claude Code is a native binary. Debian's
# package, not the host's node: apt resolves its libraries from the same release as the base.
# poppler-utils and tesseract: PDFs to text and OCR at the media doors.
BASE_PACKAGES="python3,python3-venv,python3-pip,git,ca-certificates,procps,poppler-utils,tesseract-ocr,tesseract-ocr-eng,nodejs"
base_recipe="$(printf '%s' "$BASE_PACKAGES" | sha256sum | cut -c1-16)"
if [ "$(docker image inspect -f '{{index .Config.Labels "capsule.base.recipe"}}' "$BASE_TAG" 2>/dev/null)" != "$base_recipe" ]; then
  changed "built image $BASE_TAG with debootstrap from $MIRROR"
  rootfs="$(mktemp -d /var/tmp/capsule-rootfs.XXXXXX)"
  debootstrap --variant=minbase \
    --include="$BASE_PACKAGES" \
    bookworm "$rootfs" "$MIRROR" >/var/log/capsule-debootstrap.log 2>&1 \
    || { tail -n 40 /var/log/capsule-debootstrap.log >&2; exit 1; }
  chroot "$rootfs" apt-get clean
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin
  tar -C "$rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' --change "LABEL capsule.base.recipe=$base_recipe" - "$BASE_TAG" >/dev/null
  rm -rf "$rootfs"
fi
docker run --rm --network none "$BASE_TAG" python3 -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version'

cd "$ROOT"
RUNTIME_BASE="$BASE_TAG"
if [ "${CAPSULE_AGENT_CLIS:-}" != none ]; then
  npm_root="${NPM_ROOT:-$(npm root -g 2>/dev/null || true)}"
  [ -n "$npm_root" ] || { log "npm not found: the agent CLIs come from the host's npm (scripts/setup-clients.sh)"; exit 1; }
  base_id="$(docker image inspect -f '{{.Id}}' "$BASE_TAG")"
  agents_key="$( (python3 image/agent_clis.py key; cat image/agents.Dockerfile; echo "$base_id") | sha256sum | cut -c1-16)"
  if [ "$(docker image inspect -f '{{index .Config.Labels "capsule.agents.key"}}' "$AGENTS_TAG" 2>/dev/null)" != "$agents_key" ]; then
    changed "built image $AGENTS_TAG: $BASE_TAG + $(python3 image/agent_clis.py specs | tr '\n' ' ')from $npm_root"
    # the pin file decides: a pin the host's global npm does not hold at its version goes into
    # its own prefix (~/.cache/capsule/clients/<name>-<version>, shared with setup-clients.sh)
    while read -r spec prefix; do
      [ -n "$spec" ] || continue
      changed "npm install --prefix $prefix $spec (pinned; the host's global install is another version)"
      npm install --prefix "$prefix" --no-fund --no-audit "$spec" >/dev/null
    done < <(python3 image/agent_clis.py absent "$npm_root")
    ctx="$(mktemp -d /var/tmp/capsule-clis.XXXXXX)"
    python3 image/agent_clis.py pack "$npm_root" "$ctx/clis.tar" || { rm -rf "$ctx"; exit 1; }
    mapfile -t cli_labels < <(python3 image/agent_clis.py labels)
    docker build -q -f image/agents.Dockerfile --build-arg BASE_IMAGE="$BASE_TAG" \
      --label capsule.agents.key="$agents_key" "${cli_labels[@]}" -t "$AGENTS_TAG" "$ctx" >/dev/null \
      || { rm -rf "$ctx"; exit 1; }
    rm -rf "$ctx"
    docker image prune -f --filter label=capsule.agents.key >/dev/null || true
  fi
  RUNTIME_BASE="$AGENTS_TAG"
fi
stamp="$ROOT/wheelhouse/.capsule-src-hash"
src_hash="$( (cat pyproject.toml Dockerfile .dockerignore; find capsule roles role-schemas shims image -type f -not -name '*.pyc' -not -path '*/__pycache__/*' 2>/dev/null | sort | xargs cat) | sha256sum | cut -c1-16)"
if [ "${CAPSULE_FORCE_REBUILD:-0}" = 1 ] || [ "$(cat "$stamp" 2>/dev/null)" != "$src_hash" ]; then
  changed "built wheels into ./wheelhouse"
  mkdir -p wheelhouse
  rm -f wheelhouse/capsule-*.whl
  "$PY" -m pip wheel -q ".[fleet]" -w wheelhouse --find-links wheelhouse >/var/log/capsule-wheels.log 2>&1 \
    || { tail -n 30 /var/log/capsule-wheels.log >&2; exit 1; }
  echo "$src_hash" >"$stamp"
fi

# the image's inputs: the sources and the runtime base it is built on
image_hash="$(echo "$src_hash $(docker image inspect -f '{{.Id}}' "$RUNTIME_BASE")" | sha256sum | cut -c1-16)"
if [ "${CAPSULE_FORCE_REBUILD:-0}" = 1 ] \
   || [ "$(docker image inspect -f '{{index .Config.Labels "capsule.src"}}' "$IMAGE" 2>/dev/null)" != "$image_hash" ]; then
  changed "built image $IMAGE on $RUNTIME_BASE"
  # The CLIs are in the runtime base already (or left out on purpose): nothing from npm here.
  agent_args=(--build-arg "AGENT_CLIS=")
  docker build -q \
    --build-arg BASE_IMAGE="$RUNTIME_BASE" \
    --build-arg WHEELHOUSE=wheelhouse \
    --label capsule.src="$image_hash" \
    "${agent_args[@]}" \
    -t "$IMAGE" "$ROOT" >/dev/null
  # drop what earlier builds left: their build stages and the images this tag moved off
  docker image prune -f --filter label=capsule.stage=build >/dev/null || true
  docker image prune -f --filter label=capsule.src >/dev/null || true
fi
log "ready: $IMAGE (base $BASE_TAG)"
