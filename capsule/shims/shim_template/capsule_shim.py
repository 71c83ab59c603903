#!@PYTHON@ -IS
# capsule-shim: the thin door for shell commands (installed by `capsule shims install`).
# Runs the real command found later on PATH, then hands its output to the warm engine over the
# supervisor's control socket (docs/shell-protocol.md). Imports only os, sys and _socket (plus the
# already-loaded _signal/time): the whole budget is ~15 ms. Raw output on any failure, and on any
# reply that breaks the protocol (lengths, one deadline for the whole round trip); exit codes bit-exact.
import os
import sys
import _socket

SHIM_DIR = @SHIM_DIR@
PROGRAM = @PROGRAM@
DEFAULT_SOCKET = @SOCKET@
TIMEOUT_S = @TIMEOUT_S@  # the whole engine round trip, connect to last byte,
PER_MIB_S = @PER_MIB_S@  # plus this per MiB of output sent
REPLY_SLACK = @REPLY_SLACK@  # a reply's body: at most 2 x the request's output + this
ARGV0_PATH = @ARGV0_PATH@  # find themselves by argv[0] on PATH (a venv's python): they get the real path
MAX_BYTES = @MAX_BYTES@
SW_DISABLE = @SW_DISABLE@
SW_NO_SHIMS = @SW_NO_SHIMS@
ENV_SOCKET = @ENV_SOCKET@
ENV_SCOPE = @ENV_SCOPE@
ENV_MARKER = @ENV_MARKER@
ENV_NESTED = @ENV_NESTED@
ENV_FORWARD = @ENV_FORWARD@  # the client's markers and caps the engine reads (capsule.agents.limits)
ENV_OUT = @ENV_OUT@
TOOL_MARKS = @TOOL_MARKS@  # client -> (variable, value or "" for any): capsule/agents/clients.py
ENV_STREAM_AFTER = @ENV_STREAM_AFTER@
STREAM_AFTER_S = @STREAM_AFTER_S@  # a call still running then streams raw (servers, long builds)
RAW_ARGS = @RAW_ARGS@  # tools.txt `raw:` tokens: calls whose output must stream pass raw
FALSE = ("", "0", "false", "no", "off")
SIGNALS = (1, 2, 3, 10, 12, 15, 28)  # HUP INT QUIT USR1 USR2 TERM WINCH
RUN_FLAGS = ("--stderr", "--group", "--journal")  # ctx run's options (run_options); the shim passes none
RUN_VALUED = ("--socket", "--intent", "--scope")


def on(name, env):
    return env.get(name, "").strip().lower() not in FALSE


def streams(name, args):
    """True when this call's output must stream as it comes (tail -f, a bare python REPL)."""
    tokens = RAW_ARGS.get(name)
    if not tokens:
        return False
    if not args:
        return "bare" in tokens
    for a in args:
        if a.startswith("--"):
            if any(t.startswith("--") and a.startswith(t) for t in tokens):
                return True
        elif a.startswith("-") and len(a) > 1:
            if any(len(t) == 2 and t[0] == "-" and t[1] in a[1:] for t in tokens):
                return True
    return False


def find_real(name, env):
    me = os.path.realpath(sys.argv[0])
    here = os.path.realpath(SHIM_DIR) if SHIM_DIR else os.path.dirname(me)
    for d in env.get("PATH", "").split(":"):
        if not d or os.path.realpath(d) == here:
            continue
        cand = d + "/" + name
        if os.access(cand, os.X_OK) and not os.path.isdir(cand):
            real = os.path.realpath(cand)
            if real != me and os.path.basename(real) != PROGRAM:  # never another capsule shim
                return cand
    return None


def argv0(name, real):
    """The real command's argv[0]: the name the caller used ("sed"), or the real path for a program
    that would look that name up on PATH and find the shim. (The kernel gives a #! script its path,
    not the caller's argv[0]: a caller's own path-style argv[0] is not known here.)"""
    return real if name in ARGV0_PATH else name


def exec_real(real, args, zero):
    """Become the real command; a script without #! is run by /bin/sh, as execvp() and bash do."""
    try:
        os.execv(real, [zero] + args)
    except OSError as e:
        if e.errno != 8:  # ENOEXEC
            raise
    os.execv("/bin/sh", ["/bin/sh", real] + args)


def quote(arg):
    if arg and all(c.isalnum() or c in "@%+=:,./-_" for c in arg):
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def is_agent_call(env):
    """capsule's marker names the client it launched and that client's tool mark holds (its own
    calls carry the marker, not the mark); another marker value (a shell agent): every call."""
    if not on(ENV_MARKER, env):
        return False
    mark = TOOL_MARKS.get(env[ENV_MARKER])
    if mark is None:
        return True
    value = env.get(mark[0], "")
    return value == mark[1] if mark[1] else bool(value)


def agent_view(env):
    """(stdout, stderr): is each the very file the agent's tool call reads?

    The agent's shell recorded those files' identities when the call started (agent_env.sh, or
    the supervisor for an agent it launched); anything else on fd 1 (a subprocess capture, a
    pipe, $( ), a redirection, a pytest capfd) is a program reading the command's own bytes.
    """
    rec = env.get(ENV_OUT, "").split()
    try:
        st = os.fstat(1)
        if len(rec) < 3 or rec[1] != "%d:%d" % (st.st_dev, st.st_ino):
            return False, False
        st = os.fstat(2)
        return True, rec[2] == "%d:%d" % (st.st_dev, st.st_ino)
    except OSError:
        return False, False


def read_all(fd):
    os.lseek(fd, 0, 0)
    parts = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            return b"".join(parts)
        parts.append(b)


def copy_raw(src, dst):
    os.lseek(src, 0, 0)
    while True:
        b = os.read(src, 1 << 20)
        if not b:
            return
        write_all(dst, b)


def write_all(fd, data):
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BrokenPipeError:
            return
        view = view[n:]


class Slow(Exception):
    """The command outlasted the wait: stop holding its output."""


def stream_after(env):
    try:
        return float(env.get(ENV_STREAM_AFTER) or STREAM_AFTER_S)
    except ValueError:
        return STREAM_AFTER_S


def pump(src, dst, pos):
    """Copy what the command wrote to src since pos; returns the new position."""
    end = os.fstat(src).st_size
    while pos < end:
        b = os.pread(src, min(1 << 20, end - pos), pos)
        if not b:
            break
        write_all(dst, b)
        pos += len(b)
    return pos


def held_elsewhere(fds, since_pid):
    """Does a process started after our command (its background job) still have one of our
    captures as its stdout or stderr? Only pids above the command's are looked at (a scan of all
    of /proc costs ~10 ms; this, a listing and a few stats)."""
    try:
        keys = set()
        for fd in fds:
            st = os.fstat(fd)
            keys.add((st.st_dev, st.st_ino))
        names = os.listdir("/proc")
    except OSError:
        return False
    me = os.getpid()
    for name in names:
        if not name.isdigit() or int(name) < since_pid or int(name) == me:
            continue
        for n in ("1", "2"):
            try:
                st = os.stat("/proc/%s/fd/%s" % (name, n))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in keys:
                return True
    return False


def hand_over(fds, pos, since_pid):
    """Fork a child that copies what the background job writes to our captures on to the agent's
    stdout/stderr, punching out what it copied (the memfd does not grow), until nobody else holds
    them; the shim itself returns the command's status at once, as the shell expects."""
    try:
        if os.fork():
            return
    except OSError:
        return
    try:
        import ctypes
        import time
        libc = ctypes.CDLL(None, use_errno=True)
        punch = 0x01 | 0x02          # FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE
        idle = 0.0
        while True:
            moved = False
            for i, fd in enumerate(fds):
                new = pump(fd, 1 + i, pos[i])
                if new != pos[i]:
                    libc.fallocate(fd, punch, ctypes.c_long(0), ctypes.c_long(new))
                    pos[i], moved = new, True
            if moved:
                idle = 0.0
                continue
            time.sleep(0.05)
            idle += 0.05
            if idle >= 0.5:
                idle = 0.0
                if not held_elsewhere(fds, since_pid):
                    for i, fd in enumerate(fds):
                        pos[i] = pump(fd, 1 + i, pos[i])
                    break
    except BaseException:
        pass
    os._exit(0)


# The socket protocol's half (request, reply, journal): shim_protocol.py, whose text shims.render()
# puts here.
@PROTOCOL@


def run_options(argv):
    """`capsule ctx run`'s options before REAL (the compiled capture's, cli/warm.py): ({option: value},
    the index of REAL), or None for an option that is not known or lacks its value."""
    opts, i = {}, 1
    while i < len(argv) and argv[i].startswith("--"):
        if argv[i] in RUN_FLAGS:
            opts[argv[i]] = True
            i += 1
        elif argv[i] in RUN_VALUED and i + 1 < len(argv):
            opts[argv[i]] = argv[i + 1]
            i += 2
        else:
            return None
    return opts, i


def main():
    env = os.environ
    if len(sys.argv) > 1 and sys.argv[1].startswith("--"):
        return run_main(env)
    name = os.path.basename(sys.argv[0])
    args = sys.argv[1:]
    real = find_real(name, env)
    if real is None:
        write_all(2, ("capsule-shim: %s: command not found after %s on PATH\n" % (name, SHIM_DIR)).encode())
        return 127
    sock = env.get(ENV_SOCKET) or DEFAULT_SOCKET
    view_out = view_err = False
    if not (on(SW_DISABLE, env) or on(SW_NO_SHIMS, env) or env.get(ENV_NESTED) or not is_agent_call(env)
            or not sock or os.isatty(0) or streams(name, args)):
        view_out, view_err = agent_view(env)
    zero = argv0(name, real)
    if not view_out or not os.path.exists(sock):
        exec_real(real, args, zero)
    return capture(env, real, zero, name, args, sock, view_err, {})


def run_main(env):
    """The capture mode: `capsule-shim.py [--socket PATH] [--intent TEXT] [--scope TEXT] [--stderr]
    [--group] [--journal] REAL ARGV0 [ARGS...]`, as the compiled capture is run by `ctx run`."""
    parsed = run_options(sys.argv)
    if parsed is None or len(sys.argv) - parsed[1] < 2:
        write_all(2, b"usage: capsule-shim.py [--socket PATH] [--intent TEXT] [--scope TEXT] [--stderr] "
                     b"[--group] [--journal] REAL ARGV0 [ARGS...] (run by capsule ctx run)\n")
        return 2
    opts, i = parsed
    real, given, args = sys.argv[i], sys.argv[i + 1], sys.argv[i + 2:]
    name = os.path.basename(given)
    zero = real if name in ARGV0_PATH else given
    sock = opts.get("--socket") or env.get(ENV_SOCKET) or DEFAULT_SOCKET
    view_err = opts.get("--stderr") or agent_view(env)[1]
    return capture(env, real, zero, name, args, sock, view_err, opts)


def capture(env, real, zero, name, args, sock, view_err, opts):
    """Run the command with its output held in memory files, then the engine's emission (or its own
    bytes); the exit status is the command's (a signal that killed it kills this process too)."""
    import _signal
    import time
    # With --journal the memory files are the journal's too (run_journal.py opens them by this name)
    journal = bool(opts.get("--journal"))
    flags = 3 if journal else 1      # MFD_CLOEXEC, with --journal | MFD_ALLOW_SEALING (unjournal)
    out_fd = os.memfd_create("capsule-journal-out" if journal else "capsule-out", flags)
    err_fd = os.memfd_create("capsule-journal-err" if journal else "capsule-err", flags)
    group = bool(opts.get("--group"))
    own_group = {"setpgroup": 0} if group else {}     # --group: the command leads its own process group
    started = time.monotonic()
    child_env = dict(env)
    child_env[ENV_NESTED] = "1"
    actions = [(os.POSIX_SPAWN_DUP2, out_fd, 1), (os.POSIX_SPAWN_DUP2, err_fd, 2)]
    try:
        try:
            pid = os.posix_spawn(real, [zero] + args, child_env, file_actions=actions, **own_group)
        except OSError as e:
            if e.errno != 8:  # ENOEXEC: a script without #!, run by /bin/sh
                raise
            pid = os.posix_spawn("/bin/sh", ["/bin/sh", real] + args, child_env, file_actions=actions, **own_group)
    except OSError:
        exec_real(real, args, zero)  # could not spawn: run it raw in our place
    command = " ".join([name] + [quote(a) for a in args])
    if journal and not send_journal(sock, (out_fd, err_fd), command):
        journal = False
    ours = []      # --group: a terminating signal that came once the command was gone was meant for us
    reaped = []

    def forward(signum, frame):
        if group and reaped and not ours and signum in (1, 2, 3, 15):
            ours.append(signum)
            # End now, as `cat` would, even blocked writing to a reader that does not read; what was
            # not shown yet is still in the unsealed journal (--journal): the engine keeps it.
            _signal.signal(signum, _signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        try:
            if group:
                os.killpg(pid, signum)   # the group outlives its leader while members hold the output
            elif not reaped:
                os.kill(pid, signum)
        except OSError:
            pass
    for sig in SIGNALS:
        try:
            _signal.signal(sig, forward)
        except (OSError, ValueError):
            pass
    # Hold the output while the command runs, but not forever: a call still running after the
    # wait (a dev server, a long build) shows what it has and streams the rest raw.
    def on_alarm(signum, frame):
        raise Slow()
    status = None
    streaming = False
    after = stream_after(env)
    if after > 0:
        _signal.signal(_signal.SIGALRM, on_alarm)
        _signal.setitimer(_signal.ITIMER_REAL, after)
    try:
        while status is None:
            try:
                status = os.waitpid(pid, 0)[1]
            except InterruptedError:
                continue
    except Slow:
        streaming = True
        if journal:
            unjournal(out_fd, err_fd)    # what is shown from now on is not held
    if after > 0:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _signal.signal(_signal.SIGALRM, _signal.SIG_DFL)
    if streaming:
        pos = [0, 0]
        while True:
            pos[0] = pump(out_fd, 1, pos[0])
            pos[1] = pump(err_fd, 2, pos[1])
            if status is not None:
                break
            try:
                wpid, st = os.waitpid(pid, os.WNOHANG)
            except InterruptedError:
                continue
            if wpid:
                status = st          # one more pump: what it wrote just before exiting
                reaped.append(pid)
            else:
                time.sleep(0.05)
    reaped.append(pid)
    duration_ms = (time.monotonic() - started) * 1000.0
    if os.WIFSIGNALED(status):
        code = 128 + os.WTERMSIG(status)
    else:
        code = os.waitstatus_to_exitcode(status)
    if held_elsewhere((out_fd, err_fd), pid):
        # A background job (`make serve`'s server) still writes to our capture: everything goes raw,
        # and a child of ours keeps copying it to the agent, freeing what it copied, until it is done.
        pos = [0, 0] if not streaming else pos
        pos = [pump(out_fd, 1, pos[0]), pump(err_fd, 2, pos[1])]
        if journal:
            unjournal(out_fd, err_fd)
        hand_over((out_fd, err_fd), pos, pid)
    elif streaming:
        pass             # already written raw, as it came
    elif os.fstat(out_fd).st_size + os.fstat(err_fd).st_size > MAX_BYTES:
        copy_raw(out_fd, 1)  # too big to hand over whole: raw, streamed in chunks (bounded memory)
        copy_raw(err_fd, 2)
    else:
        out, err = read_all(out_fd), read_all(err_fd)
        try:
            result = ask_engine(sock, command, out, err, code, duration_ms,
                                env.get(ENV_SCOPE) or env.get("CLAUDE_CODE_SESSION_ID")
                                or env.get("CODEX_THREAD_ID") or opts.get("--scope") or "",
                                "".join("%s=%s\n" % (k, env[k]) for k in ENV_FORWARD if k in env).encode(
                                    "utf-8", "surrogateescape"), opts.get("--intent"))
        except Exception:
            result = None
        if result is not None:
            out = result[0]
            if view_err:  # stderr redirected elsewhere (2>log) keeps its own bytes
                err = result[1]
        write_all(1, out)
        write_all(2, err)
    if journal:
        unjournal(out_fd, err_fd)    # shown (or streamed): nothing to keep
    if ours and not os.WIFSIGNALED(status):
        status = ours[0]             # the signal was ours: end by it, as without capsule in between
    if os.WIFSIGNALED(status) or ours:
        sig = ours[0] if ours else os.WTERMSIG(status)
        for s in SIGNALS:
            try:
                _signal.signal(s, _signal.SIG_DFL)
            except (OSError, ValueError):
                pass
        try:
            _signal.signal(sig, _signal.SIG_DFL)
        except (OSError, ValueError):
            pass
        try:
            os.kill(os.getpid(), sig)
        except OSError:
            pass
    return code


if __name__ == "__main__":
    os._exit(main())  # output went out with os.write; skip interpreter teardown (~ms)
