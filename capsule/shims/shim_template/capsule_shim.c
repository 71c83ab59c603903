/* capsule-shim (compiled): the shell door's first step, decided before anything else starts.
 * A command whose stdout is not the agent's own view (a script's sed, a build's cc, $( ), a pipe)
 * execs the real command at once: the same process, so exit codes, signals and the terminal are
 * the command's own. Only the agent's own view goes on, to capsule-capture (compiled, does the
 * capture and the engine round trip), else to the Python shim, else raw.
 * Invariant: this program only decides and execs; it never writes the command's output.
 * Built by `capsule shims install`: freestanding (no libc, raw syscalls: a static glibc binary costs
 * ~0.4 ms of page faults per exec, which every shimmed command of a script would pay), or with libc
 * where that build fails. @GENERATED@ */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

__attribute__((used)) static const char marker[] = "# capsule-shim: compiled";

static const char SHIM_DIR[] = @SHIM_DIR@;
static const char PROGRAM[] = @PROGRAM@;
static const char DEFAULT_SOCKET[] = @SOCKET@;
static const char PY_DIR[] = @PY_DIR@;     /* DIR/.py/<tool> -> ../capsule-shim.py */
static const char CAPTURE[] = @CAPTURE@;   /* DIR/capsule-capture */
static const char SW_DISABLE[] = @SW_DISABLE@;
static const char SW_NO_SHIMS[] = @SW_NO_SHIMS@;
static const char ENV_SOCKET[] = @ENV_SOCKET@;
static const char ENV_MARKER[] = @ENV_MARKER@;
static const char ENV_NESTED[] = @ENV_NESTED@;
static const char ENV_OUT[] = @ENV_OUT@;
/* client, variable, value ("": any) per described client: capsule/agents/clients.py, the identity rule */
static const char *const TOOL_MARKS[] = {@TOOL_MARKS@ 0};
/* tools.txt `raw:` tokens, name then tokens: a call whose output must stream passes raw */
static const char *const RAW_ARGS[] = {@RAW_ARGS@ 0};
/* tools that find their own installation by looking argv[0] up on PATH (they would find the shim:
 * CPython would lose its venv): they get the real command's path as argv[0], the others the caller's */
static const char *const ARGV0_PATH[] = {@ARGV0_PATH@ 0};

#define MAXPATH 4096

#ifdef CAPSULE_FREESTANDING
/* Linux system calls without libc (x86_64, aarch64); install falls back to the libc build elsewhere. */
#if defined(__x86_64__)
static long sc(long n, long a, long b, long c, long d) {
    long r;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return r;
}
__asm__(".text\n.globl _start\n_start:\n xor %rbp,%rbp\n mov %rsp,%rdi\n and $-16,%rsp\n call cstart\n hlt\n");
#elif defined(__aarch64__)
static long sc(long n, long a, long b, long c, long d) {
    register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b, x2 __asm__("x2") = c,
                  x3 __asm__("x3") = d;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
    return x0;
}
__asm__(".text\n.globl _start\n_start:\n mov x0, sp\n bl cstart\n");
#else
#error "no freestanding system calls for this architecture"
#endif
static int sys_stat(const char *p, struct stat *st) { return sc(SYS_newfstatat, AT_FDCWD, (long)p, (long)st, 0) == 0; }
static int sys_fstat(int fd, struct stat *st) { return sc(SYS_fstat, fd, (long)st, 0, 0) == 0; }
static int sys_exe(const char *p) { return sc(SYS_faccessat, AT_FDCWD, (long)p, 1 /* X_OK */, 0) == 0; }
static long sys_readlink(const char *p, char *buf, long n) { return sc(SYS_readlinkat, AT_FDCWD, (long)p, (long)buf, n); }
static long sys_execve(const char *p, char **argv, char **envp) { return sc(SYS_execve, (long)p, (long)argv, (long)envp, 0); }
static void sys_write(int fd, const char *s, long n) { sc(SYS_write, fd, (long)s, n, 0); }
static int sys_isatty(int fd) { char t[64]; return sc(SYS_ioctl, fd, 0x5401 /* TCGETS */, (long)t, 0) == 0; }
__attribute__((noreturn)) static void sys_exit(int code) { for (;;) sc(SYS_exit_group, code, 0, 0, 0); }
/* gcc may emit calls to these for struct copies even when freestanding */
void *memcpy(void *d, const void *s, unsigned long n) {
    char *dp = d; const char *sp = s;
    while (n--) *dp++ = *sp++;
    return d;
}
void *memset(void *d, int c, unsigned long n) {
    char *dp = d;
    while (n--) *dp++ = (char)c;
    return d;
}
#else
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
static int sys_stat(const char *p, struct stat *st) { return stat(p, st) == 0; }
static int sys_fstat(int fd, struct stat *st) { return fstat(fd, st) == 0; }
static int sys_exe(const char *p) { return access(p, X_OK) == 0; }
static long sys_readlink(const char *p, char *buf, long n) { return readlink(p, buf, n); }
static long sys_execve(const char *p, char **argv, char **envp) { execve(p, argv, envp); return -errno; }
static void sys_write(int fd, const char *s, long n) { (void)!write(fd, s, n); }
static int sys_isatty(int fd) { return isatty(fd); }
#endif

static unsigned long len(const char *s) { unsigned long n = 0; while (s[n]) n++; return n; }
static int eq(const char *a, const char *b) { while (*a && *a == *b) a++, b++; return *a == *b; }
static int prefix(const char *s, const char *p) { while (*p && *s == *p) s++, p++; return !*p; }
static int space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c; }

/* s + t (+ u) into out, cut at MAXPATH */
static void join(char *out, const char *s, const char *t, const char *u) {
    unsigned long n = 0;
    for (const char *parts[3] = {s, t, u}, **p = parts; p < parts + 3; p++)
        for (const char *c = *p; c && *c && n < MAXPATH - 1; c++) out[n++] = *c;
    out[n] = 0;
}

static char **ENVP;

static const char *getenv_(const char *name) {
    for (char **e = ENVP; *e; e++) {
        const char *v = *e, *n = name;
        while (*n && *v == *n) v++, n++;
        if (!*n && *v == '=') return v + 1;
    }
    return 0;
}

/* the switch rule of capsule/ground/switches.py: on unless "", "0", "false", "no", "off" (trimmed, any case) */
static int on(const char *name) {
    const char *v = getenv_(name);
    if (!v) return 0;
    while (space(*v)) v++;
    unsigned long n = len(v);
    while (n && space(v[n - 1])) n--;
    if (n == 0) return 0;
    static const char *const FALSE_WORDS[] = {"0", "false", "no", "off"};
    for (int i = 0; i < 4; i++) {
        const char *w = FALSE_WORDS[i];
        unsigned long k = 0;
        while (k < n && w[k] && lower(v[k]) == w[k]) k++;
        if (k == n && !w[k]) return 0;
    }
    return 1;
}

static int set(const char *name) { const char *v = getenv_(name); return v && *v; }

/* An agent tool call: capsule's marker names the client it launched and that client's tool mark
 * holds (its own calls, git for its prompt, carry the marker but not the mark); any other marker
 * value (a shell agent) makes every call one. No marker: not an agent capsule launched. */
static int agent_call_(void) {
    if (!on(ENV_MARKER)) return 0;
    const char *m = getenv_(ENV_MARKER);
    for (int i = 0; TOOL_MARKS[i]; i += 3) {
        if (!eq(m, TOOL_MARKS[i])) continue;
        const char *v = getenv_(TOOL_MARKS[i + 1]);
        return v && *v && (!*TOOL_MARKS[i + 2] || eq(v, TOOL_MARKS[i + 2]));
    }
    return 1;
}

/* "DEV:INO" of st, as the agent's shell recorded it (stat -c %d:%i) */
static void ident(const struct stat *st, char *out) {
    char tmp[48];
    int n = 0;
    unsigned long long parts[2] = {(unsigned long long)st->st_dev, (unsigned long long)st->st_ino};
    for (int p = 1; p >= 0; p--) {           /* written backwards: ino, ':', dev */
        unsigned long long v = parts[p];
        do tmp[n++] = (char)('0' + v % 10), v /= 10; while (v);
        if (p) tmp[n++] = ':';
    }
    for (int i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    out[n] = 0;
}

/* Is fd 1 the very file the agent's tool call reads? ($ENV_OUT = "KEY DEV:INO DEV:INO") */
static int agent_view(void) {
    const char *rec = getenv_(ENV_OUT);
    if (!rec) return 0;
    const char *tok[3] = {0};
    unsigned long tlen[3] = {0};
    int n = 0;
    for (const char *p = rec; *p && n < 3;) {
        while (space(*p)) p++;
        if (!*p) break;
        tok[n] = p;
        while (*p && !space(*p)) p++;
        tlen[n] = (unsigned long)(p - tok[n]);
        n++;
    }
    struct stat st;
    if (n < 3 || !sys_fstat(1, &st)) return 0;
    char id[48];
    ident(&st, id);
    unsigned long k = len(id);
    if (k != tlen[1]) return 0;
    for (unsigned long i = 0; i < k; i++)
        if (tok[1][i] != id[i]) return 0;
    return 1;
}

/* the basename of path once its last component's symlinks are followed (realpath's last part) */
static const char *final_name(const char *path, char *buf) {
    char cur[MAXPATH], link[MAXPATH];
    join(cur, path, 0, 0);
    for (int hops = 0; hops < 40; hops++) {
        long n = sys_readlink(cur, link, MAXPATH - 1);
        if (n <= 0) break;
        link[n] = 0;
        if (link[0] == '/') {
            join(cur, link, 0, 0);
        } else {
            char dir[MAXPATH];
            join(dir, cur, 0, 0);
            unsigned long k = len(dir);
            while (k && dir[k - 1] != '/') k--;
            dir[k] = 0;
            join(cur, dir, link, 0);
        }
    }
    unsigned long k = len(cur);
    while (k && cur[k - 1] == '/') cur[--k] = 0;
    const char *base = cur + k;
    while (base > cur && base[-1] != '/') base--;
    join(buf, base, 0, 0);
    return buf;
}

/* The real command: the first NAME on PATH that is not a capsule shim (not this program, not in
 * this shim directory, not a link to another directory's capsule-shim), as capsule_shim.py's
 * find_real, in a few stats instead of a realpath per PATH entry. */
static int find_real(const char *name, char *out) {
    struct stat me, here, st, dst;
    int have_me = sys_stat("/proc/self/exe", &me);    /* no /proc: the name and directory checks remain */
    int have_here = sys_stat(SHIM_DIR, &here);
    const char *p = getenv_("PATH");
    if (!p) return 0;
    char dir[MAXPATH], cand[MAXPATH], base[MAXPATH];
    while (1) {
        const char *end = p;
        while (*end && *end != ':') end++;
        unsigned long n = (unsigned long)(end - p);
        if (n && n < MAXPATH - 2) {
            for (unsigned long i = 0; i < n; i++) dir[i] = p[i];
            dir[n] = 0;
            join(cand, dir, "/", name);
            if (sys_stat(cand, &st) && !S_ISDIR(st.st_mode) &&
                !(have_me && st.st_dev == me.st_dev && st.st_ino == me.st_ino) &&
                !(have_here && sys_stat(dir, &dst) && dst.st_dev == here.st_dev && dst.st_ino == here.st_ino) &&
                sys_exe(cand) && !eq(final_name(cand, base), PROGRAM)) {
                join(out, cand, 0, 0);
                return 1;
            }
        }
        if (!*end) return 0;
        p = end + 1;
    }
}

/* the next space-separated token of *t (its length; 0 at the end) */
static unsigned long token(const char **t, const char **start) {
    while (**t == ' ') (*t)++;
    *start = *t;
    while (**t && **t != ' ') (*t)++;
    return (unsigned long)(*t - *start);
}

/* True when this call's output must stream as it comes (tail -f, a bare python REPL): tools.txt's
 * `raw:` tokens, as capsule_shim.py's streams() reads them. */
static int streams(const char *name, char **args) {
    const char *tokens = 0, *t, *tok;
    unsigned long tl;
    for (int i = 0; RAW_ARGS[i]; i += 2)
        if (eq(RAW_ARGS[i], name)) tokens = RAW_ARGS[i + 1];
    if (!tokens) return 0;
    if (!args[0]) {                                  /* bare: no arguments at all */
        for (t = tokens; (tl = token(&t, &tok));)
            if (tl == 4 && prefix(tok, "bare")) return 1;
        return 0;
    }
    for (char **a = args; *a; a++) {
        const char *arg = *a;
        if (arg[0] != '-' || !arg[1]) continue;
        for (t = tokens; (tl = token(&t, &tok));) {
            if (arg[1] == '-') {                     /* --word: a long option starting with it */
                unsigned long k = 0;
                while (k < tl && arg[k] == tok[k]) k++;
                if (tl > 2 && tok[1] == '-' && k == tl) return 1;
            } else if (tl == 2 && tok[0] == '-') {   /* -x: a short-option cluster holding x */
                for (const char *c = arg + 1; *c; c++)
                    if (*c == tok[1]) return 1;
            }
        }
    }
    return 0;
}

static void say(const char *a, const char *b, const char *c, const char *d) {
    char msg[3 * MAXPATH];
    unsigned long n = 0;
    for (const char *parts[5] = {"capsule-shim: ", a, b, c, d}, **p = parts; p < parts + 5; p++)
        for (const char *s = *p; *s && n < sizeof msg - 1; s++) msg[n++] = *s;
    sys_write(2, msg, (long)n);
}

static int run(int argc, char **argv) {
    (void)argc;
    const char *name = argv[0];
    for (const char *s = argv[0]; *s; s++)
        if (*s == '/') name = s + 1;
    char real[MAXPATH], py[MAXPATH];
    join(py, PY_DIR, "/", name);
    if (!find_real(name, real)) {
        say(name, ": command not found after ", SHIM_DIR, " on PATH\n");
        return 127;
    }
    const char *sock = getenv_(ENV_SOCKET);
    if (!sock || !*sock) sock = DEFAULT_SOCKET;
    int agent_call = agent_call_();
    struct stat st;
    int handoff = !(on(SW_DISABLE) || on(SW_NO_SHIMS) || set(ENV_NESTED) || !agent_call || !*sock ||
                    sys_isatty(0) || streams(name, argv + 1)) && agent_view() && sys_stat(sock, &st);
    if (handoff) {
        /* capsule-capture REAL ARGV0 ARGS...: captures, asks the engine, emits; raw on any failure */
        char *cargv[argc + 3];
        cargv[0] = (char *)CAPTURE;
        cargv[1] = real;
        cargv[2] = argv[0];
        for (int i = 1; i <= argc; i++) cargv[i + 2] = argv[i];
        sys_execve(CAPTURE, cargv, ENVP);
        argv[0] = py;       /* no capsule-capture: the Python shim captures */
        sys_execve(py, argv, ENVP);
    }
    for (int i = 0; ARGV0_PATH[i]; i++)
        if (eq(ARGV0_PATH[i], name)) argv[0] = real;
    if (sys_execve(real, argv, ENVP) == -8 /* ENOEXEC */) {
        /* a script without #!: the shell runs it, as execvp() and bash do for the real command */
        char *sargv[argc + 2];
        sargv[0] = (char *)"/bin/sh";
        sargv[1] = real;
        for (int i = 1; i <= argc; i++) sargv[i + 1] = argv[i];
        sys_execve("/bin/sh", sargv, ENVP);
    }
    argv[0] = py;           /* the real command would not start: the Python shim reports it */
    sys_execve(py, argv, ENVP);
    say(real, ": cannot execute", "", "\n");
    return 126;
}

#ifdef CAPSULE_FREESTANDING
__attribute__((noreturn, used)) void cstart(long *sp) {
    int argc = (int)sp[0];
    char **argv = (char **)(sp + 1);
    ENVP = argv + argc + 1;
    sys_exit(run(argc, argv));
}
#else
int main(int argc, char **argv, char **envp) {
    ENVP = envp;
    return run(argc, argv);
}
#endif
