#!/usr/bin/env bash
set -euo pipefail
LOG_DIR=/tmp/logs

log() {
  echo "[$(date)] $*" >> "$LOG_DIR/run.log"
}

function cleanup {
  rm -rf "$LOG_DIR"
  echo done
}

trap cleanup EXIT
log "start"
