# capsule_shim.py's half that speaks docs/shell-protocol.md: the OBS1 request and its reply's
# checks under one deadline, the JRN1 journal of what ctx run's capture holds, and the seal that
# says it was shown. Not a module of its own: shims.render() puts its text where capsule_shim.py
# says @PROTOCOL@, beside the constants and helpers it uses.


def length(field, most):
    """A reply length: 1 to 20 ASCII digits, at most `most`; None otherwise."""
    if not (0 < len(field) <= 20 and field.isdigit()):
        return None
    n = int(field)
    return n if n <= most else None


def ask_engine(path, command, out, err, code, duration_ms, scope, meta=b"", intent=None):
    """(stdout, stderr) of the emission, or None: RAW, or a reply that breaks the protocol."""
    import time
    # one budget for all of it: a drip cannot extend it
    deadline = time.monotonic() + TIMEOUT_S + PER_MIB_S * (len(out) + len(err)) / (1 << 20)
    max_body = 2 * (len(out) + len(err)) + REPLY_SLACK
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)

    def left():
        t = deadline - time.monotonic()
        if t <= 0:
            raise TimeoutError("engine round trip over its deadline")
        return t

    def send(data):
        view = memoryview(data)
        while view:
            s.settimeout(left())
            view = view[s.send(view):]

    try:
        s.settimeout(left())
        s.connect(path)
        c, sc = command.encode("utf-8", "surrogateescape"), scope.encode("utf-8", "surrogateescape")
        try:
            cwd = os.getcwd().encode("utf-8", "surrogateescape")  # project filters live in the workspace
        except OSError:
            cwd = b""
        head = b"OBS1 %d %d %d %d %d %d %d %d" % (code, int(duration_ms * 1000), len(c), len(out), len(err),
                                                  len(sc), len(cwd), len(meta))
        it = intent.encode("utf-8", "surrogateescape") if intent is not None else b""
        head += b" %d\n" % len(it) if intent is not None else b"\n"   # the 9-number form only with an intent
        for part in (head + c, out, err, sc, cwd, meta, it):
            send(part)
        s.shutdown(_socket.SHUT_WR)
        chunks, size = [], 0
        while True:
            s.settimeout(left())
            b = s.recv(1 << 20)
            if not b:
                break
            size += len(b)
            if size > max_body + 64:     # longer than any honest reply
                return None
            chunks.append(b)
    finally:
        s.close()
    reply = b"".join(chunks)
    nl = reply.find(b"\n")
    fields = reply[:nl].split(b" ") if nl > 0 else []
    if len(fields) != 3 or fields[0] != b"OK":
        return None
    n_out, n_err = length(fields[1], max_body), length(fields[2], max_body)
    body = reply[nl + 1:]
    if n_out is None or n_err is None or len(body) != n_out + n_err:
        return None
    return body[:n_out], body[n_out:]


def send_journal(sock, fds, command):
    """ctx run's journal (--journal): one JRN1 request naming the memory files that hold the output,
    sent, not waited for; the engine keeps what they still hold if this process ends first
    (supervisor/run_journal.py). False when it could not be sent (no journal: the output is still held)."""
    try:
        cwd = os.getcwd().encode("utf-8", "surrogateescape")
    except OSError:
        cwd = b""
    c = command.encode("utf-8", "surrogateescape")
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.setblocking(False)
        s.connect(sock)
        s.sendall(b"JRN1 %d %d %d %d %d\n" % (os.getpid(), fds[0], fds[1], len(c), len(cwd)) + c + cwd)
        return True
    except OSError:
        return False
    finally:
        s.close()


def unjournal(out_fd, err_fd):
    """What the journalled memory files hold is shown, or streams from now on: they are sealed against
    shrinking (F_SEAL_SHRINK), which the engine's watcher reads as "nothing to keep" (run_journal.py).
    Not emptied: the command (or its background job) may be writing to them now, and a truncation
    would take bytes not yet copied; a seal never stops a write."""
    import fcntl
    for fd in (out_fd, err_fd):
        try:
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
        except OSError:
            pass
