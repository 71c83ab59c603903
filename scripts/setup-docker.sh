#!/usr/bin/env bash
# Prepare a real Docker engine and the capsule image, offline except for PyPI and Debian.
# Idempotent: every step checks before it acts. Run as root (CI is root).
#   1. docker.io + debootstrap from apt (apt-get update first) when missing
#   2. dockerd started when `docker info` fails; waits until it answers
#   3. a Debian bookworm base (python3, git) built with debootstrap + `docker import`
#   4. the project's wheels built on the host into ./wheelhouse (same ABI: CPython 3.11)
#   5. `docker build` of the capsule image from that base and wheelhouse
# Env: CAPSULE_BASE_TAG (capsule-base:bookworm), CAPSULE_IMAGE (capsule:dev),
#      CAPSULE_FORCE_REBUILD=1 rebuilds wheels and the image, DEBIAN_MIRROR,
#      CAPSULE_AGENT_CLIS="@anthropic-ai/claude-code @openai/codex" adds agent CLIs (npm).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE_TAG="${CAPSULE_BASE_TAG:-capsule-base:bookworm}"
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

if ! docker image inspect "$BASE_TAG" >/dev/null 2>&1; then
  changed "built image $BASE_TAG with debootstrap from $MIRROR"
  rootfs="$(mktemp -d /var/tmp/capsule-rootfs.XXXXXX)"
  debootstrap --variant=minbase \
    --include=python3,python3-venv,python3-pip,git,ca-certificates,procps,poppler-utils,tesseract-ocr,tesseract-ocr-eng \
    bookworm "$rootfs" "$MIRROR" >/var/log/capsule-debootstrap.log 2>&1 \
    || { tail -n 40 /var/log/capsule-debootstrap.log >&2; exit 1; }
  chroot "$rootfs" apt-get clean
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin
  tar -C "$rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' - "$BASE_TAG" >/dev/null
  rm -rf "$rootfs"
fi
docker run --rm --network none "$BASE_TAG" python3 -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version'

cd "$ROOT"
stamp="$ROOT/wheelhouse/.capsule-src-hash"
src_hash="$( (cat pyproject.toml Dockerfile .dockerignore; find capsule roles role-schemas shims image -type f -not -name '*.pyc' -not -path '*/__pycache__/*' 2>/dev/null | sort | xargs cat) | sha256sum | cut -c1-16)"
if [ "${CAPSULE_FORCE_REBUILD:-0}" = 1 ] || [ "$(cat "$stamp" 2>/dev/null)" != "$src_hash" ]; then
  changed "built wheels into ./wheelhouse"
  mkdir -p wheelhouse
  rm -f wheelhouse/capsule-*.whl
  "$PY" -m pip wheel -q . -w wheelhouse --find-links wheelhouse >/var/log/capsule-wheels.log 2>&1 \
    || { tail -n 30 /var/log/capsule-wheels.log >&2; exit 1; }
  echo "$src_hash" >"$stamp"
fi

if [ "${CAPSULE_FORCE_REBUILD:-0}" = 1 ] \
   || [ "$(docker image inspect -f '{{index .Config.Labels "capsule.src"}}' "$IMAGE" 2>/dev/null)" != "$src_hash" ]; then
  changed "built image $IMAGE"
  # The Dockerfile installs the agent CLIs from npm by default; npm is not reachable inside
  # this offline build, so the test image runs shell agents unless CAPSULE_AGENT_CLIS says otherwise.
  agent_args=(--build-arg "AGENT_CLIS=${CAPSULE_AGENT_CLIS:-}")
  docker build -q \
    --build-arg BASE_IMAGE="$BASE_TAG" \
    --build-arg WHEELHOUSE=wheelhouse \
    --label capsule.src="$src_hash" \
    "${agent_args[@]}" \
    -t "$IMAGE" "$ROOT" >/dev/null
  # drop what earlier builds left: their build stages and the images this tag moved off
  docker image prune -f --filter label=capsule.stage=build >/dev/null || true
  docker image prune -f --filter label=capsule.src >/dev/null || true
fi
log "ready: $IMAGE (base $BASE_TAG)"
