/* capsule-shim (compiled): the shell door's first step, decided before any interpreter starts.
 * A command whose stdout is not the agent's own view (a script's sed, a build's cc, $( ), a pipe)
 * execs the real command at once: the same process, so exit codes, signals and the terminal are
 * the command's own. Only the agent's own view goes on to the Python shim (capsule-shim.py), which
 * decides again and does the capture. Built by `capsule shims install` with the system compiler;
 * without one the Python shim is installed in its place. @GENERATED@ */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

__attribute__((used)) static const char marker[] = "# capsule-shim: compiled";

static const char *SHIM_DIR = @SHIM_DIR@;
static const char *PROGRAM = @PROGRAM@;
static const char *DEFAULT_SOCKET = @SOCKET@;
static const char *PY_DIR = @PY_DIR@;     /* DIR/.py/<tool> -> ../capsule-shim.py */
static const char *SW_DISABLE = @SW_DISABLE@;
static const char *SW_NO_SHIMS = @SW_NO_SHIMS@;
static const char *ENV_SOCKET = @ENV_SOCKET@;
static const char *ENV_MARKER = @ENV_MARKER@;
static const char *ENV_NESTED = @ENV_NESTED@;
static const char *ENV_OUT = @ENV_OUT@;

/* the switch rule of capsule/ground/switches.py: on unless "", "0", "false", "no", "off" */
static int on(const char *name) {
    const char *v = getenv(name);
    if (!v) return 0;
    while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r' || *v == '\f' || *v == '\v') v++;
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\n' || v[n - 1] == '\r' ||
                 v[n - 1] == '\f' || v[n - 1] == '\v')) n--;
    if (n == 0) return 0;
    static const char *FALSE_WORDS[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < sizeof FALSE_WORDS / sizeof *FALSE_WORDS; i++)
        if (strlen(FALSE_WORDS[i]) == n && strncasecmp(v, FALSE_WORDS[i], n) == 0) return 0;
    return 1;
}

static int set(const char *name) {
    const char *v = getenv(name);
    return v && *v;
}

/* Is fd 1 the very file the agent's tool call reads? ($ENV_OUT = "KEY DEV:INO DEV:INO") */
static int agent_view(void) {
    const char *rec = getenv(ENV_OUT);
    if (!rec) return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", rec);
    char *save = NULL, *tok[3] = {0};
    int n = 0;
    for (char *t = strtok_r(buf, " \t\n\r\f\v", &save); t && n < 3; t = strtok_r(NULL, " \t\n\r\f\v", &save))
        tok[n++] = t;
    if (n < 3) return 0;
    struct stat st;
    if (fstat(1, &st) != 0) return 0;
    char id[64];
    snprintf(id, sizeof id, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    return strcmp(tok[1], id) == 0;
}

static int find_real(const char *name, char *out, size_t outlen) {
    char me[PATH_MAX], here[PATH_MAX], real[PATH_MAX], dreal[PATH_MAX];
    if (!realpath("/proc/self/exe", me)) return 0;
    if (!(SHIM_DIR[0] && realpath(SHIM_DIR, here))) {
        snprintf(here, sizeof here, "%s", me);
        char *slash = strrchr(here, '/');
        if (slash) *slash = 0;
    }
    const char *path = getenv("PATH");
    if (!path) return 0;
    const char *p = path;
    while (1) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len && len < PATH_MAX - 2) {
            char dir[PATH_MAX];
            memcpy(dir, p, len);
            dir[len] = 0;
            if (!(realpath(dir, dreal) && strcmp(dreal, here) == 0)) {
                char cand[PATH_MAX];
                struct stat st;
                snprintf(cand, sizeof cand, "%s/%s", dir, name);
                if (access(cand, X_OK) == 0 && stat(cand, &st) == 0 && !S_ISDIR(st.st_mode) &&
                    realpath(cand, real)) {
                    const char *base = strrchr(real, '/');
                    base = base ? base + 1 : real;
                    if (strcmp(real, me) != 0 && strcmp(base, PROGRAM) != 0) {
                        snprintf(out, outlen, "%s", cand);
                        return 1;
                    }
                }
            }
        }
        if (!end) return 0;
        p = end + 1;
    }
}

int main(int argc, char **argv) {
    (void)argc;
    const char *name = strrchr(argv[0], '/');
    name = name ? name + 1 : argv[0];
    char py[PATH_MAX];
    snprintf(py, sizeof py, "%s/%s", PY_DIR, name);
    char real[PATH_MAX];
    if (!find_real(name, real, sizeof real)) {
        fprintf(stderr, "capsule-shim: %s: command not found after %s on PATH\n", name, SHIM_DIR);
        return 127;
    }
    const char *sock = getenv(ENV_SOCKET);
    if (!sock || !*sock) sock = DEFAULT_SOCKET;
    int agent_call = (getenv("CLAUDECODE") && strcmp(getenv("CLAUDECODE"), "1") == 0) ||
                     set("CODEX_THREAD_ID") || on(ENV_MARKER);
    struct stat st;
    int handoff = !(on(SW_DISABLE) || on(SW_NO_SHIMS) || set(ENV_NESTED) || !agent_call || !*sock ||
                    isatty(0)) && agent_view() && stat(sock, &st) == 0;
    if (handoff) {
        argv[0] = py;       /* the Python shim decides again (raw-streaming tools) and captures */
        execv(py, argv);    /* not there: the real command, as the Python shim would run it */
    }
    argv[0] = real;
    execv(real, argv);
    argv[0] = py;           /* the real command would not start: the Python shim reports it */
    execv(py, argv);
    fprintf(stderr, "capsule-shim: %s: %s\n", real, strerror(errno));
    return 126;
}
