/* capture_protocol.c: the compiled capture's half that speaks docs/shell-protocol.md: the command
 * line quoted as the Python shim quotes it, the OBS1 request and its one deadline, the JRN1 journal
 * of what a killed capture held, and the reply's checks. Not a translation unit of its own:
 * shims.render_capture() puts its text where capsule_capture.c says @PROTOCOL@, after the
 * constants, options and buffer helpers it uses. */

/* the code points above ASCII for which Python's str.isalnum() holds, as ranges (install renders
 * them from the installing Python's unicodedata) */
static const unsigned int ALNUM[][2] = {@ALNUM@};

static int alnum_cp(unsigned int cp) {
    size_t lo = 0, hi = sizeof ALNUM / sizeof *ALNUM;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < ALNUM[mid][0]) hi = mid;
        else if (cp > ALNUM[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

/* One strict UTF-8 character at c (its length), or 0 where Python's surrogateescape would escape. */
static int utf8(const unsigned char *c, unsigned int *cp) {
    int n = c[0] >= 0xF0 ? 4 : c[0] >= 0xE0 ? 3 : c[0] >= 0xC2 ? 2 : 0;
    if (!n || c[0] > 0xF4) return 0;
    unsigned int v = c[0] & (0x3F >> (n - 1));
    for (int i = 1; i < n; i++) {
        if ((c[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (c[i] & 0x3F);
    }
    static const unsigned int least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return n;
}

/* capsule_shim.py's quote(): an argument passes bare when every character is str.isalnum() or one
 * of @%+=:,./-_ (arguments are UTF-8 with surrogateescape: an invalid byte is never alnum) */
static int plain(const char *arg) {
    if (!*arg) return 0;
    for (const unsigned char *c = (const unsigned char *)arg; *c;) {
        if (*c < 0x80) {
            if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  strchr("@%+=:,./-_", *c))) return 0;
            c++;
            continue;
        }
        unsigned int cp;
        int n = utf8(c, &cp);
        if (!n || !alnum_cp(cp)) return 0;
        c += n;
    }
    return 1;
}

/* the command line the engine classifies: NAME and each argument shell-quoted as capsule_shim.py */
static int command_line(buf *b, const char *name, char **args) {
    if (!put(b, name, strlen(name))) return 0;
    for (char **a = args; *a; a++) {
        if (!put(b, " ", 1)) return 0;
        if (plain(*a)) {
            if (!put(b, *a, strlen(*a))) return 0;
            continue;
        }
        if (!put(b, "'", 1)) return 0;
        for (const char *c = *a; *c; c++)
            if (!(*c == '\'' ? put(b, "'\"'\"'", 5) : put(b, c, 1))) return 0;
        if (!put(b, "'", 1)) return 0;
    }
    return 1;
}

/* Wait until fd is ready for ev, or the deadline passes (0). */
static int ready_by(int fd, short ev, double deadline) {
    for (;;) {
        double left = deadline - now();
        if (left <= 0) return 0;
        struct pollfd p = {fd, ev, 0};
        int r = poll(&p, 1, (int)(left * 1000.0) + 1);
        if (r > 0) return 1;                  /* POLLHUP/POLLERR too: the send or recv reports them */
        if (r < 0 && errno != EINTR) return 0;
    }
}

/* One OBS1 request; the whole reply (until the supervisor closes) into reply, at most max_reply
 * bytes. 0 on any failure, or when the round trip outlasts TIMEOUT_S in total (the caller emits raw). */
static int ask_engine(const char *path, buf *cmd, buf *out, buf *err, int code, double duration_ms,
                      buf *reply, size_t max_reply) {
    /* one budget for all of it: a drip of bytes cannot extend it */
    double deadline = now() + TIMEOUT_S + PER_MIB_S * (double)(out->len + err->len) / (1 << 20);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) return 0;
    strcpy(addr.sun_path, path);
    buf scope = {0}, cwd = {0}, meta = {0}, intent = {0};
    const char *sc = getenv(ENV_SCOPE);
    if (!sc || !*sc) sc = getenv("CLAUDE_CODE_SESSION_ID");
    if (!sc || !*sc) sc = getenv("CODEX_THREAD_ID");
    if ((!sc || !*sc) && opt_scope) sc = opt_scope;
    if (sc && *sc && !put(&scope, sc, strlen(sc))) return 0;
    char here[8192];
    if (getcwd(here, sizeof here) && !put(&cwd, here, strlen(here))) return 0;   /* project filters live there */
    for (int i = 0; ENV_FORWARD[i]; i++) {
        const char *v = getenv(ENV_FORWARD[i]);
        if (v && !(put(&meta, ENV_FORWARD[i], strlen(ENV_FORWARD[i])) && put(&meta, "=", 1) &&
                   put(&meta, v, strlen(v)) && put(&meta, "\n", 1))) return 0;
    }
    int ok = 0, s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return 0;
    double budget = deadline - now();
    struct timeval tv = {(time_t)budget, (suseconds_t)((budget - (double)(time_t)budget) * 1e6)};
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);    /* also bounds connect() on a Unix socket */
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(s, (struct sockaddr *)&addr, sizeof addr) != 0) goto done;
    char head[256];
    if (opt_intent && !put(&intent, opt_intent, strlen(opt_intent))) goto done;
    /* the 9-number form only with an intent (ctx run --intent): the shims send the 8-number form */
    int hn = snprintf(head, sizeof head, opt_intent ? "OBS1 %d %lld %zu %zu %zu %zu %zu %zu %zu\n"
                                                    : "OBS1 %d %lld %zu %zu %zu %zu %zu %zu\n", code,
                      (long long)(duration_ms * 1000), cmd->len, out->len, err->len, scope.len, cwd.len, meta.len,
                      intent.len);
    buf *parts[] = {0, cmd, out, err, &scope, &cwd, &meta, &intent};
    for (int i = 0; i < 8; i++) {
        const char *p = i ? parts[i]->data : head;
        size_t n = i ? parts[i]->len : (size_t)hn;
        while (n) {
            if (!ready_by(s, POLLOUT, deadline)) goto done;
            ssize_t w = send(s, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (w <= 0) goto done;
            p += w, n -= (size_t)w;
        }
    }
    shutdown(s, SHUT_WR);
    char chunk[1 << 16];
    for (;;) {
        if (!ready_by(s, POLLIN, deadline)) goto done;
        ssize_t r = recv(s, chunk, sizeof chunk, MSG_DONTWAIT);
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (r < 0) goto done;
        if (r == 0) break;
        if ((size_t)r > max_reply - reply->len) goto done;   /* longer than any honest reply */
        if (!put(reply, chunk, (size_t)r)) goto done;
    }
    ok = 1;
done:
    close(s);
    free(scope.data), free(cwd.data), free(meta.data), free(intent.data);
    return ok;
}

/* ctx run's journal (--journal): what is held is written to two memory files too, which one JRN1
 * request names (sent, not waited for); the engine opens them and, if this process ends before it
 * emptied them (its output shown), journals their bytes redacted for the next run to archive
 * (supervisor/run_journal.py). Best effort: any failure here costs the journal, never the output. */
static int jfd[2] = {-1, -1};

static void journal_stop(void) {          /* the output was shown: nothing to keep */
    for (int i = 0; i < 2; i++)
        if (jfd[i] >= 0) (void)!ftruncate(jfd[i], 0), close(jfd[i]), jfd[i] = -1;
}

static void journal_put(int i, const char *p, size_t n) {
    if (jfd[i] < 0) return;
    while (n) {
        ssize_t w = write(jfd[i], p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {                      /* out of memory: no journal, the output is still held */
            journal_stop();
            return;
        }
        p += w, n -= (size_t)w;
    }
}

static int send_now(int s, const char *p, size_t n) {    /* all of it without waiting, or 0 */
    while (n) {
        ssize_t w = send(s, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return 0;
        p += w, n -= (size_t)w;
    }
    return 1;
}

static void journal_start(const char *path, buf *cmd) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) return;
    strcpy(addr.sun_path, path);
    jfd[0] = memfd_create("capsule-journal-out", MFD_CLOEXEC);
    jfd[1] = memfd_create("capsule-journal-err", MFD_CLOEXEC);
    char here[8192], head[128];
    const char *cwd = getcwd(here, sizeof here) ? here : "";
    int hn = snprintf(head, sizeof head, "JRN1 %d %d %d %zu %zu\n", (int)getpid(), jfd[0], jfd[1], cmd->len,
                      strlen(cwd));
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int sent = jfd[0] >= 0 && jfd[1] >= 0 && s >= 0 && connect(s, (struct sockaddr *)&addr, sizeof addr) == 0 &&
               send_now(s, head, (size_t)hn) && send_now(s, cmd->data ? cmd->data : "", cmd->len) &&
               send_now(s, cwd, strlen(cwd));
    if (s >= 0) close(s);                  /* the engine reads it from the socket's buffer */
    if (!sent) journal_stop();
}

/* A length of the reply's header: 1 to 20 ASCII digits, at most `most`, ending at `stop`. */
static int length(const char **p, const char *end, char stop, size_t most, size_t *out) {
    size_t v = 0;
    int digits = 0;
    for (; *p < end && **p >= '0' && **p <= '9'; (*p)++, digits++) {
        size_t d = (size_t)(**p - '0');
        if (digits >= 20 || v > (most - d) / 10) return 0;     /* over the bound: never wraps */
        v = v * 10 + d;
    }
    if (!digits || *p >= end || **p != stop) return 0;
    (*p)++;
    *out = v;
    return 1;
}

/* "OK <n_out> <n_err>\n" + exactly n_out + n_err bytes, each length at most max_body -> offsets into
 * reply; 0 for anything else (RAW, a short or long body, a bad number, garbage) */
static int parse_reply(buf *reply, size_t max_body, size_t *n_out, size_t *n_err, const char **body) {
    if (!reply->data || reply->len < 3 || memcmp(reply->data, "OK ", 3) != 0) return 0;
    const char *p = reply->data + 3, *end = reply->data + reply->len;
    size_t a, b;
    if (!length(&p, end, ' ', max_body, &a) || !length(&p, end, '\n', max_body, &b)) return 0;
    size_t have = (size_t)(end - p);
    if (a > have || b != have - a) return 0;             /* no a + b: it cannot overflow */
    *n_out = a, *n_err = b, *body = p;
    return 1;
}
