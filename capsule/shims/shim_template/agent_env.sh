# capsule-shim: agent shell setup, sourced before each agent tool call (Claude Code: CLAUDE_ENV_FILE,
# evaluated after its shell snapshot; Codex: BASH_ENV). Written by `capsule shims install`; POSIX sh,
# prints nothing, costs one `stat`. It never rewrites the command, so the client's permission
# system still sees the original. Invariant: it records the identity of the open files this tool
# call's output goes to; a shim compresses only output written to exactly those, so a capture, a
# pipe, `$( )` or a redirection inside the call always gets the command's own bytes.
# The user's own file first. Emptied while it runs: if it is another capsule-env.sh (a session
# inside a session) or this one, it must not chain again, forever.
if [ -n "${@ENV_CHAIN@-}" ] && [ -r "$@ENV_CHAIN@" ]; then
  __capsule_chain=$@ENV_CHAIN@; @ENV_CHAIN@=; . "$__capsule_chain"; @ENV_CHAIN@=$__capsule_chain; unset __capsule_chain
fi
# Shims first on PATH: Codex builds the tool shell's PATH from a login-shell snapshot (/etc/profile
# resets it), so the PATH capsule launched the agent with is gone by now.
case ":${PATH-}:" in
  *:@SHIM_DIR@:*) ;;
  *) PATH=@SHIM_DIR@:"${PATH-}"; export PATH ;;
esac
# One record per tool call: Codex names each call; otherwise the first shell of the call records
# and every nested shell (bash -c inside the call, a script) keeps it.
__capsule_rec=${@ENV_OUT@-}
__capsule_key=
if [ -n "${CODEX_TOOL_CALL_ID-}" ]; then
  [ "${__capsule_rec%% *}" = "call:$CODEX_TOOL_CALL_ID" ] || __capsule_key="call:$CODEX_TOOL_CALL_ID"
elif [ -z "$__capsule_rec" ]; then
  __capsule_key="pid:$$"
fi
if [ -n "$__capsule_key" ]; then
  @ENV_OUT@="$__capsule_key $(stat -L -c %d:%i /proc/$$/fd/1 /proc/$$/fd/2 2>/dev/null)"
  export @ENV_OUT@
fi
unset __capsule_rec __capsule_key
# Claude Code's snapshot defines grep and find as shell functions (its bundled ugrep/bfs); they
# would shadow the PATH shims.
unset -f grep find 2>/dev/null
:
