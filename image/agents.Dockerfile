# The CLI layer of the offline image: the debootstrap base (python3, git, Debian's nodejs) plus the
# agent CLIs installed on the host with npm and the host's node binary (/usr/local/bin/node, ahead
# of Debian's 18 on PATH: Gemini CLI needs >= 20), packed by image/agent_clis.py. Built by
# scripts/setup-docker.sh as its own image so the 600+ MB layer is cached apart from capsule's venv.
#   docker build -f image/agents.Dockerfile --build-arg BASE_IMAGE=capsule-base:bookworm CONTEXT_WITH_clis.tar
ARG BASE_IMAGE=capsule-base:bookworm
FROM ${BASE_IMAGE}
ADD clis.tar /
# fail the build, not the first agent run, when a CLI cannot start here (Gemini CLI refuses an old node)
RUN node --version && claude --version && codex --version && gemini --version
