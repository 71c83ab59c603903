# /etc/profile.d/capsule.sh: login shells (Codex runs `bash -lc`) keep capsule's shims first on PATH.
case ":$PATH:" in
  *:/opt/capsule/shims:*) ;;
  *) PATH="/opt/capsule/shims:/opt/capsule/venv/bin:$PATH" ;;
esac
export PATH
