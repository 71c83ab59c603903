/* capsule-capture (compiled): the agent's own view of one shimmed command, as capsule_shim.py does
 * it, without an interpreter's start. capsule-shim execs it as `capsule-capture REAL ARGV0 ARGS...`
 * once it has decided the call's stdout is the agent's view. It runs the real command (with the
 * caller's argv[0]) with its stdout/stderr to pipes, hands both to the warm engine over the
 * supervisor's socket (docs/shell-protocol.md) and writes the emission.
 * Invariant: fail open. Any error, and any reply that breaks the protocol (a length that does not
 * match, an overflow, a supervisor slower than the round trip's one deadline), shows the command's
 * own bytes; the exit status is the command's
 * (a signal that killed it kills this process too); a call still running after the stream wait,
 * or larger than MAX_BYTES, streams raw from then on; a background job still holding the output
 * when the command exits gets it copied on raw by a child, and this process returns at once.
 * `capsule ctx run` execs it too, with options before REAL (run_options()): the one capture that
 * speaks the socket protocol for both doors (issue 32.1).
 * @GENERATED@ */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

__attribute__((used)) static const char marker[] = "# capsule-shim: compiled capture";

static const char *DEFAULT_SOCKET = @SOCKET@;
static const double TIMEOUT_S = @TIMEOUT_S@;         /* the whole engine round trip, connect to last byte, */
static const double PER_MIB_S = @PER_MIB_S@;         /* plus this per MiB of output sent */
static const size_t REPLY_SLACK = @REPLY_SLACK@;     /* a reply's body: at most 2 x the request's output + this */
static const char *const ARGV0_PATH[] = {@ARGV0_PATH@ 0};   /* find themselves by argv[0] on PATH */
static const long long MAX_BYTES = @MAX_BYTES@;      /* larger outputs stream raw */
static const double STREAM_AFTER_S = @STREAM_AFTER_S@;
static const char *ENV_SOCKET = @ENV_SOCKET@;
static const char *ENV_SCOPE = @ENV_SCOPE@;
static const char *ENV_NESTED = @ENV_NESTED@;
static const char *ENV_OUT = @ENV_OUT@;
static const char *ENV_STREAM_AFTER = @ENV_STREAM_AFTER@;
static const char *const ENV_FORWARD[] = {@ENV_FORWARD@ 0};   /* capsule.agents.limits.env_names() */
static const int SIGNALS[] = {SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGTERM, SIGWINCH};
#define NSIG_FWD (int)(sizeof SIGNALS / sizeof *SIGNALS)

extern char **environ;
static volatile pid_t child = 0;
static volatile sig_atomic_t child_exited = 0;

/* `capsule ctx run`'s options (before REAL; the shim passes none): the socket it found, the step's
 * intent and its scope (sent in the OBS1 request), stderr as the agent's view, the command in a
 * process group of its own (no terminal: a forwarded signal reaches all it started), and a
 * terminating signal that arrives once the command is gone ends this process with it. */
static const char *opt_socket = NULL, *opt_intent = NULL, *opt_scope = NULL;
static int opt_stderr = 0, opt_group = 0, opt_journal = 0;
static volatile sig_atomic_t reaped_flag = 0, ours = 0;

typedef struct { char *data; size_t len, cap; } buf;

static int put(buf *b, const void *p, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < b->len + n + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) return 0;
        b->data = d, b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
    return 1;
}

static void write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;            /* the reader went away (EPIPE): nothing more to do */
        p += w, n -= (size_t)w;
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void forward(int sig) {
    int saved = errno;
    if (opt_group && reaped_flag && !ours &&
        (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT)) ours = sig;  /* meant for us */
    if (child > 0) {
        if (opt_group) kill(-child, sig);     /* the group outlives its leader while members hold the pipes */
        else if (!reaped_flag) kill(child, sig);
    }
    errno = saved;
}

static void on_child(int sig) { (void)sig; child_exited = 1; }

/* "DEV:INO" of fd, as the agent's shell recorded it (stat -c %d:%i) */
static int ident(int fd, char *out, size_t n) {
    struct stat st;
    if (fstat(fd, &st) != 0) return 0;
    snprintf(out, n, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    return 1;
}

/* Is stderr the agent's view too? (capsule-shim checked stdout.) 2>log keeps its own bytes. */
static int view_err(void) {
    const char *rec = getenv(ENV_OUT);
    if (!rec) return 0;
    char copy[512], *save = NULL, *tok[3] = {0}, id[64];
    snprintf(copy, sizeof copy, "%s", rec);
    int n = 0;
    for (char *t = strtok_r(copy, " \t\n\r\f\v", &save); t && n < 3; t = strtok_r(NULL, " \t\n\r\f\v", &save))
        tok[n++] = t;
    if (n < 3 || !ident(1, id, sizeof id) || strcmp(tok[1], id) != 0) return 0;
    return ident(2, id, sizeof id) && strcmp(tok[2], id) == 0;
}

static double stream_after(void) {
    const char *v = getenv(ENV_STREAM_AFTER);
    if (!v || !*v) return STREAM_AFTER_S;
    char *end;
    double d = strtod(v, &end);
    while (*end == ' ' || *end == '\t' || *end == '\n') end++;
    return end == v || *end ? STREAM_AFTER_S : d;
}

/* The socket protocol's half (quoting, request, journal, reply): capture_protocol.c, whose text
 * shims.render_capture() puts here. */
@PROTOCOL@

/* The command's environment: ours with ENV_NESTED=1 (shims inside it pass through) */
static char **child_env(void) {
    size_t n = 0;
    while (environ[n]) n++;
    char **env = malloc((n + 2) * sizeof *env);
    if (!env) return NULL;
    size_t k = 0, nl = strlen(ENV_NESTED);
    for (size_t i = 0; i < n; i++)
        if (!(strncmp(environ[i], ENV_NESTED, nl) == 0 && environ[i][nl] == '=')) env[k++] = environ[i];
    static char nested[256];
    snprintf(nested, sizeof nested, "%s=1", ENV_NESTED);
    env[k++] = nested;
    env[k] = NULL;
    return env;
}

/* One read from a polled pipe that has something: its byte count (> 0); 0 when there is nothing to
 * take now; -1 when it closed (it is closed here and leaves the poll set). */
static ssize_t read_ready(struct pollfd *pf, int *open_, char *chunk, size_t size) {
    if (pf->fd < 0 || !pf->revents) return 0;
    ssize_t r = read(pf->fd, chunk, size);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
    if (r <= 0) {
        close(pf->fd);
        pf->fd = -1, (*open_)--;
        return -1;
    }
    return r;
}

/* A background job (`make serve`'s server) still holds a pipe (-1: one at its end already): copy on
 * raw until it lets go. */
static void hand_over(int fds[2]) {
    pid_t p = fork();
    if (p != 0) return;               /* the parent (or a failed fork) returns the status at once */
    for (int i = 0; i < NSIG_FWD; i++) signal(SIGNALS[i], SIG_DFL);
    int open_ = 0;
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0) fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) & ~O_NONBLOCK), open_++;
    struct pollfd pf[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};   /* a closed one is -1: skipped */
    char chunk[1 << 16];
    while (open_) {
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            ssize_t r = read_ready(&pf[i], &open_, chunk, sizeof chunk);
            if (r > 0) write_all(1 + i, chunk, (size_t)r);
        }
    }
    _exit(0);
}

/* /bin/sh REAL ARGS...: a script without #! is run by the shell, as execvp() and bash do */
static char **sh_argv(const char *real, char **argv) {
    size_t n = 0;
    while (argv[n]) n++;
    char **out = malloc((n + 2) * sizeof *out);
    if (!out) return NULL;
    out[0] = (char *)"/bin/sh";
    out[1] = (char *)real;
    memcpy(out + 2, argv + 1, n * sizeof *out);     /* ARGS and the terminating NULL */
    return out;
}

static void raw_exec(const char *real, char **argv) {
    execv(real, argv);
    char **sh = errno == ENOEXEC ? sh_argv(real, argv) : NULL;
    if (sh) execv("/bin/sh", sh);
    fprintf(stderr, "capsule-shim: %s: %s\n", real, strerror(errno));
    _exit(126);
}

/* The argv[0] the command gets: the caller's ("sed", as typed), except for a program that finds its
 * own installation by looking argv[0] up on PATH, where it would find the shim (CPython: a venv's
 * python would lose its venv); that one gets its real path. */
static char *argv0_for(const char *name, const char *real, char *given) {
    for (int i = 0; ARGV0_PATH[i]; i++)
        if (strcmp(ARGV0_PATH[i], name) == 0) return (char *)real;
    return given;
}

/* `capsule ctx run`'s options before REAL (cli/warm.py builds them): how many argv entries they took,
 * or -1 for one that is not known or lacks its value. REAL never starts with "--" (a path). */
/* End this process by `sig`, as the command (or the signal sent to it) ended: its parent sees what a
   direct run would show. Forwarding handlers go first so no later signal is caught instead. */
static void die_by(int sig) {
    struct sigaction dflt = {0};
    dflt.sa_handler = SIG_DFL;
    for (int i = 0; i < NSIG_FWD; i++) sigaction(SIGNALS[i], &dflt, NULL);
    sigaction(sig, &dflt, NULL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    kill(getpid(), sig);
}

static int run_options(int argc, char **argv) {
    int i = 1;
    while (i < argc && strncmp(argv[i], "--", 2) == 0) {
        const char *o = argv[i];
        if (strcmp(o, "--stderr") == 0) opt_stderr = 1, i++;
        else if (strcmp(o, "--group") == 0) opt_group = 1, i++;
        else if (strcmp(o, "--journal") == 0) opt_journal = 1, i++;
        else if (i + 1 >= argc) return -1;
        else if (strcmp(o, "--socket") == 0) opt_socket = argv[i + 1], i += 2;
        else if (strcmp(o, "--intent") == 0) opt_intent = argv[i + 1], i += 2;
        else if (strcmp(o, "--scope") == 0) opt_scope = argv[i + 1], i += 2;
        else return -1;
    }
    return i - 1;
}

int main(int argc, char **argv) {
    int taken = run_options(argc, argv);
    if (taken < 0 || argc - taken < 3) {
        fprintf(stderr, "usage: capsule-capture [--socket PATH] [--intent TEXT] [--scope TEXT] [--stderr] "
                        "[--group] [--journal] REAL ARGV0 [ARGS...] (run by capsule-shim and capsule ctx run)\n");
        return 2;
    }
    argv += taken;
    const char *real = argv[1], *name = strrchr(argv[2], '/') ? strrchr(argv[2], '/') + 1 : argv[2];
    char **args = argv + 3, **real_argv = argv + 2;     /* [ARGV0, ARGS...] */
    real_argv[0] = argv0_for(name, real, argv[2]);
    const char *sock = opt_socket ? opt_socket : getenv(ENV_SOCKET);
    if (!sock || !*sock) sock = DEFAULT_SOCKET;
    int err_view = opt_stderr || view_err();
    double after = stream_after();

    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) != 0) raw_exec(real, real_argv);
    if (pipe2(pe, O_CLOEXEC) != 0) raw_exec(real, real_argv);
    char **env = child_env();
    if (!env) raw_exec(real, real_argv);

    /* SIGCHLD blocked except inside ppoll (no lost wakeup); the command gets our mask as it was and
     * SIGPIPE as we were given it (we ignore it: a reader gone from our stdout is not an error). */
    sigset_t chld, orig;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &orig);
    struct sigaction sa = {0}, old_pipe;
    sa.sa_handler = on_child;
    sigaction(SIGCHLD, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, &old_pipe);
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&fa);
    sigset_t dfl;
    sigemptyset(&dfl);
    if (old_pipe.sa_handler != SIG_IGN) sigaddset(&dfl, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &dfl);
    posix_spawnattr_setsigmask(&attr, &orig);
    if (opt_group) posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
                                        (opt_group ? POSIX_SPAWN_SETPGROUP : 0));
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
    double started = now();
    pid_t pid;
    int spawned = posix_spawn(&pid, real, &fa, &attr, real_argv, env);
    char **sh = spawned == ENOEXEC ? sh_argv(real, real_argv) : NULL;
    if (sh) spawned = posix_spawn(&pid, "/bin/sh", &fa, &attr, sh, env);
    if (spawned != 0) {
        sigaction(SIGPIPE, &old_pipe, NULL);
        sigprocmask(SIG_SETMASK, &orig, NULL);
        raw_exec(real, real_argv);     /* could not spawn: run it raw in our place */
    }
    child = pid;
    close(po[1]);
    close(pe[1]);
    buf cmd = {0};
    int have_cmd = command_line(&cmd, name, args);
    if (opt_journal && have_cmd) journal_start(sock, &cmd);
    sa.sa_handler = forward;
    for (int i = 0; i < NSIG_FWD; i++) sigaction(SIGNALS[i], &sa, NULL);   /* no SA_RESTART: ppoll wakes */

    /* Hold the output while the command runs, but not forever: a call still running after the wait
     * (a dev server, a long build) shows what it has and streams the rest raw; so does a huge one. */
    int fds[2] = {po[0], pe[0]};
    buf held[2] = {{0}, {0}};
    int streaming = 0, status = 0, reaped = 0, open_ = 2;
    struct pollfd pf[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    char chunk[1 << 16];
    for (;;) {
        if (child_exited && !reaped) {
            child_exited = 0;
            if (waitpid(pid, &status, WNOHANG) == pid) {
                reaped = 1, reaped_flag = 1;
                /* what is left now can be read without waiting; a pipe still open after that is held
                 * by someone else (a background job) */
                for (int i = 0; i < 2; i++) fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
            }
        }
        if (!open_ && reaped) break;
        struct timespec ts, *tp = NULL;
        if (reaped) {
            ts.tv_sec = 0, ts.tv_nsec = 0, tp = &ts;
        } else if (!streaming && after > 0) {
            double left = started + after - now();
            if (left < 0) left = 0;
            ts.tv_sec = (time_t)left, ts.tv_nsec = (long)((left - (double)(time_t)left) * 1e9), tp = &ts;
        }
        int rc = ppoll(pf, 2, tp, &orig);
        if (rc < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (rc == 0) {
            if (reaped) break;                 /* drained: whoever still holds a pipe is a background job */
            if (!streaming) {                  /* outlasted the wait */
                streaming = 1;
                journal_stop();
                for (int i = 0; i < 2; i++) write_all(1 + i, held[i].data, held[i].len), held[i].len = 0;
            }
            continue;
        }
        for (int i = 0; i < 2; i++) {
            ssize_t r = read_ready(&pf[i], &open_, chunk, sizeof chunk);
            if (r <= 0) continue;
            if (streaming) {
                write_all(1 + i, chunk, (size_t)r);
                continue;
            }
            int stored = put(&held[i], chunk, (size_t)r);
            if (stored) journal_put(i, chunk, (size_t)r);
            if (!stored || (long long)(held[0].len + held[1].len) > MAX_BYTES) {
                /* too big to hand over whole (or out of memory): raw, what we hold and the rest */
                streaming = 1;
                for (int j = 0; j < 2; j++) write_all(1 + j, held[j].data, held[j].len), held[j].len = 0;
                if (!stored) write_all(1 + i, chunk, (size_t)r);
            }
        }
    }
    if (!reaped) {                          /* the loop broke on an error: the status still counts */
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        reaped_flag = 1;
    }
    double duration_ms = (now() - started) * 1000.0;
    int code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    int held_elsewhere = (pf[0].fd >= 0 || pf[1].fd >= 0);
    if (held_elsewhere) {
        if (!streaming)
            for (int i = 0; i < 2; i++) write_all(1 + i, held[i].data, held[i].len);
        journal_stop();
        int still[2] = {pf[0].fd, pf[1].fd};
        hand_over(still);
    } else if (!streaming) {
        buf reply = {0};
        size_t n_out, n_err;
        const char *body;
        size_t max_body = 2 * (held[0].len + held[1].len) + REPLY_SLACK;
        int ok = have_cmd &&
                 ask_engine(sock, &cmd, &held[0], &held[1], code, duration_ms, &reply, max_body + 64) &&
                 parse_reply(&reply, max_body, &n_out, &n_err, &body);
        if (ok) {
            write_all(1, body, n_out);
            if (err_view) write_all(2, body + n_out, n_err);
            else write_all(2, held[1].data, held[1].len);
        } else {
            write_all(1, held[0].data, held[0].len);
            write_all(2, held[1].data, held[1].len);
        }
    }
    journal_stop();                         /* shown (or streamed): nothing to keep */
    if (ours && !WIFSIGNALED(status))        /* a terminating signal once the command was gone: ours */
        die_by(ours);
    if (WIFSIGNALED(status))
        die_by(WTERMSIG(status));
    return code;
}
