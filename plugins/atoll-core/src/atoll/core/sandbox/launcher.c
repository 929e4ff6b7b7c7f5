/*
 * atoll-sandbox-launch: the runs of a sandbox session, each in a prepared box and isolated
 * from every other run.
 *
 * Why it exists: starting a bubblewrap box costs milliseconds (namespaces, a
 * dozen bind mounts, pivot_root), which a judge running 70 short programs a
 * submission pays 70 times. A session prepares the box once (bubblewrap's
 * mount namespace, held by a descriptor) and this launcher, started once per
 * session as a server, starts each run in a private copy of it, in a few
 * hundred microseconds. A run's process is forked by the server as pid 1 of a
 * pid namespace of its own; it
 *
 *   - joins the run's cgroups (its memory, pids and CPU limits and counters);
 *   - enters the box's network and UTS namespaces and a *copy* of its mount
 *     namespace, with a fresh tmpfs on /tmp, a fresh /proc, and the run's own
 *     bind mounts; fresh IPC and cgroup namespaces;
 *   - starts the program as pid 2 and exits when it does, so that the kernel
 *     kills whatever the program left running (as bubblewrap's own pid 1 does);
 *   - the program gets the run's rlimits, a new session, an empty environment
 *     but the given variables, the unprivileged uid and gid, no supplementary
 *     groups, no capabilities (bounding, inheritable, ambient) and
 *     no_new_privs, then is exec'd.
 *
 * Nothing a run does reaches the box or the next run: its files live in its
 * own tmpfs and writable mounts, its IPC objects in its own namespace, and its
 * processes die with it. Everything is set by the trusted caller; a failure
 * before the program starts prints one line naming the step and exits 125
 * without writing the status record, so that the caller reports a sandbox
 * failure rather than a program failure.
 *
 * A run's exit status: the program's exit code, or 128 + N if a signal N
 * ended it (as bubblewrap reports it).
 *
 * The status record: `{ "child-pid": N }` once the program has started, then,
 * once pid 1 has reaped it, `{ "exit-code": C, "utime-us": U, "stime-us": S,
 * "maxrss-kb": M }` (C as pid 1 then exits, the CPU time and peak size of
 * every process it reaped), and pid 1 closes it, if no other process of the
 * run is left. The caller takes that hang-up as the end of the run: pid 1's
 * own exit, which tears the run's namespaces down, is not on the run's path.
 * Without that last line (processes were left, which die with pid 1, or pid 1
 * was killed), the server's report says how the run ended, once all is gone.
 *
 * The server (`--serve FD --parent PID`, then the box's descriptors) reads
 * requests from the SOCK_SEQPACKET socket FD. Forking each run from it spares
 * every run an exec and the caller's own fork. A request is NUL-separated
 * words: "run", the per-run options and the command, with the run's stdin,
 * stdout, stderr and status descriptors attached (SCM_RIGHTS). It answers
 * nothing until it has reaped the run's pid 1, then "exit STATUS UTIME_US
 * STIME_US MAXRSS_KB" (pid 1's wait status and resource use), which the
 * caller takes before its next request: runs never overlap. "kill" (no
 * descriptors) kills the run in flight, if any. It exits when the socket
 * closes. "prepare" and the cgroup.procs files of the next run's
 * cgroups (no descriptors, no answer) forks that run's process ahead, while
 * the current run runs: it joins those cgroups at once (on cgroup v1 that
 * waits for an RCU grace period, which a run started later no longer waits
 * for) and waits; "prepared" with the same words as "run" hands it its request
 * (it does not join again). The server empties its capability bounding set
 * once, at start; the runs it forks inherit that. It outlives the thread that
 * started it, so it watches its parent process through a pidfd rather than the
 * parent-death signal (which follows the thread): once that process is gone it
 * kills the run in flight, if any, and exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

#define MAX_ITEMS 64
#define NAME "atoll-sandbox-launch"

struct bind {
    const char *source;
    const char *target;
    int writable;
    int fd; /* a detached copy of the source's mount (open_tree), made on the host's side */
};

struct rlim {
    int resource;
    rlim_t soft, hard;
};

struct options {
    pid_t host_pid; /* this run's pid 1 as the host sees it, for the status record */
    int status_fd;
    const char *cgroups[MAX_ITEMS];
    int n_cgroups;
    struct rlim rlimits[MAX_ITEMS];
    int n_rlimits;
    struct bind binds[MAX_ITEMS];
    int n_binds;
    const char *env[MAX_ITEMS];
    int n_env;
    unsigned long long tmpfs_bytes;
    const char *workdir;
    uid_t uid;
    gid_t gid;
    char **argv;
};

static void die(const char *fmt, ...) {
    va_list ap;
    int saved = errno;
    va_start(ap, fmt);
    fprintf(stderr, NAME ": ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, ": %s\n", strerror(saved));
    _exit(125);
}

static void usage(const char *what) {
    fprintf(stderr, NAME ": bad command line: %s\n", what);
    _exit(125);
}

static long long number(const char *text, const char *what) {
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno || *end || end == text) usage(what);
    return value;
}

static rlim_t limit_value(const char *text) {
    return strcmp(text, "inf") == 0 ? RLIM_INFINITY : (rlim_t)number(text, "rlimit value");
}

static void parse(int argc, char **argv, struct options *o) {
    memset(o, 0, sizeof *o);
    o->status_fd = -1;
    o->workdir = "/";
    int i = 1;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        int left = argc - i - 1;
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (left < 1) usage(arg);
        if (strcmp(arg, "--host-pid") == 0) o->host_pid = (pid_t)number(argv[++i], arg);
        else if (strcmp(arg, "--status-fd") == 0) o->status_fd = (int)number(argv[++i], arg);
        else if (strcmp(arg, "--tmpfs") == 0) o->tmpfs_bytes = (unsigned long long)number(argv[++i], arg);
        else if (strcmp(arg, "--chdir") == 0) o->workdir = argv[++i];
        else if (strcmp(arg, "--uid") == 0) o->uid = (uid_t)number(argv[++i], arg);
        else if (strcmp(arg, "--gid") == 0) o->gid = (gid_t)number(argv[++i], arg);
        else if (strcmp(arg, "--cgroup") == 0) {
            if (o->n_cgroups == MAX_ITEMS) usage("too many cgroups");
            o->cgroups[o->n_cgroups++] = argv[++i];
        } else if (strcmp(arg, "--setenv") == 0) {
            if (o->n_env == MAX_ITEMS) usage("too many variables");
            o->env[o->n_env++] = argv[++i];
        } else if (strcmp(arg, "--rlimit") == 0) {
            if (left < 3 || o->n_rlimits == MAX_ITEMS) usage(arg);
            struct rlim *r = &o->rlimits[o->n_rlimits++];
            r->resource = (int)number(argv[i + 1], "rlimit resource");
            r->soft = limit_value(argv[i + 2]);
            r->hard = limit_value(argv[i + 3]);
            i += 3;
        } else if (strcmp(arg, "--bind") == 0 || strcmp(arg, "--ro-bind") == 0) {
            if (left < 2 || o->n_binds == MAX_ITEMS) usage(arg);
            struct bind *b = &o->binds[o->n_binds++];
            b->writable = strcmp(arg, "--bind") == 0;
            b->source = argv[i + 1];
            b->target = argv[i + 2];
            b->fd = -1;
            i += 2;
        } else usage(arg);
    }
    if (i >= argc) usage("no command after --");
    if (o->uid == 0 || o->gid == 0) usage("the program never runs as root");
    o->argv = argv + i;
}

static void write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) die("open %s", path);
    ssize_t n = write(fd, text, strlen(text));
    if (n != (ssize_t)strlen(text)) die("write %s", path);
    close(fd);
}

/* Writing 0 to a cgroup.procs file moves the writer (whose pid, 1, means nothing outside). */
static void join_cgroups(const char *const *procs, int n) {
    for (int i = 0; i < n; i++) write_file(procs[i], "0\n");
}

/* The box's descriptors, held by the server: --mnt-fd, --net-fd, --uts-fd. */
struct box {
    int mnt_fd, net_fd, uts_fd;
};

/* The run's own copy of the box's mounts, its network and hostname, fresh IPC and cgroup
   namespaces; then the box's descriptors stay out of the run. */
static void enter_box(const struct box *box) {
    if (box->net_fd >= 0 && setns(box->net_fd, CLONE_NEWNET) < 0) die("enter the box's network");
    if (box->uts_fd >= 0 && setns(box->uts_fd, CLONE_NEWUTS) < 0) die("enter the box's hostname");
    if (setns(box->mnt_fd, CLONE_NEWNS) < 0) die("enter the box's mounts");
    if (unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWCGROUP) < 0)
        die("make the run's own namespaces");
    /* What this run mounts stays in its copy of the box. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) die("make the run's mounts private");
    int held[] = {box->mnt_fd, box->net_fd, box->uts_fd};
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
        if (held[i] >= 0) close(held[i]);
}

static void make_target(const struct bind *b) {
    struct stat source, target;
    if (fstat(b->fd, &source) < 0) die("stat %s", b->source);
    if (lstat(b->target, &target) == 0) {
        if (S_ISLNK(target.st_mode)) {
            errno = ELOOP;
            die("refuse the mount target %s, a symbolic link", b->target);
        }
        return;
    }
    if (errno != ENOENT) die("stat the mount target %s", b->target);
    /* A missing target may only be made inside a writable mount of this run. */
    if (S_ISDIR(source.st_mode)) {
        if (mkdir(b->target, 0755) < 0) die("make the mount point %s", b->target);
    } else {
        int fd = open(b->target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (fd < 0) die("make the mount point %s", b->target);
        close(fd);
    }
}

#define QUIET (MS_NOSUID | MS_NODEV)

static void mount_tmp(unsigned long long bytes) {
    char data[64] = "mode=1777";
    if (bytes) snprintf(data, sizeof data, "mode=1777,size=%llu", bytes);
    if (mount("tmpfs", "/tmp", "tmpfs", QUIET, data) < 0) die("mount /tmp");
}

/* A fresh /proc (of the run's pid namespace) and /tmp (`tmpfs_bytes` large, 0: the default). */
static void mount_fresh(unsigned long long tmpfs_bytes) {
    if (mount("proc", "/proc", "proc", QUIET | MS_NOEXEC, NULL) < 0) die("mount /proc");
    mount_tmp(tmpfs_bytes);
}

/* The run's own mounts: each a detached copy of its source's mount, made by the server. */
static void mount_binds(const struct options *o) {
    for (int i = 0; i < o->n_binds; i++) {
        const struct bind *b = &o->binds[i];
        make_target(b);
        if (syscall(SYS_move_mount, b->fd, "", AT_FDCWD, b->target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
            die("bind %s", b->target);
        unsigned long flags = MS_BIND | MS_REMOUNT | QUIET | (b->writable ? 0 : MS_RDONLY);
        if (mount(NULL, b->target, NULL, flags, NULL) < 0) die("remount %s", b->target);
        close(b->fd);
    }
}

static void drop_bounding_set(void) {
    for (int cap = 0;; cap++) {
        int held = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
        if (held < 0) break; /* past the last capability */
        if (held && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) die("drop capability %d", cap);
    }
}

static void drop_privileges(const struct options *o) {
    for (int i = 0; i < o->n_rlimits; i++) {
        struct rlimit r = {o->rlimits[i].soft, o->rlimits[i].hard};
        if (setrlimit(o->rlimits[i].resource, &r) < 0) die("set rlimit %d", o->rlimits[i].resource);
    }
    if (chdir(o->workdir) < 0) die("chdir %s", o->workdir);
    if (clearenv() != 0) die("clear the environment");
    for (int i = 0; i < o->n_env; i++)
        if (putenv((char *)o->env[i]) != 0) die("set %s", o->env[i]);
    if (setgroups(0, NULL) < 0) die("clear the groups");
    if (setresgid(o->gid, o->gid, o->gid) < 0) die("set the gid");
    drop_bounding_set();
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        die("clear the ambient capabilities");
    if (setresuid(o->uid, o->uid, o->uid) < 0) die("set the uid");
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct none[2];
    memset(none, 0, sizeof none);
    if (syscall(SYS_capset, &header, none) < 0) die("clear the capabilities");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die("set no_new_privs");
}

static int status_of(int wait_status) {
    if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
    return WEXITSTATUS(wait_status);
}

struct program_start {
    const struct options *o;
    int ready;
};

/* pid 2 of the run's namespace: becomes the program. It runs in pid 1's memory, pid 1
   suspended until it execs or exits (see `launch`): it writes nothing pid 1 reads again. */
static int program(void *arg) {
    const struct program_start *start = arg;
    const struct options *o = start->o;
    if (setsid() < 0) die("start a new session");
    drop_privileges(o);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) die("arm the parent-death signal");
    if (write(start->ready, "r", 1) != 1) die("report the start");
    execvp(o->argv[0], o->argv);
    fprintf(stderr, NAME ": failed to execute %s: %s\n", o->argv[0], strerror(errno));
    _exit(127);
}

/* The program's stack while it shares pid 1's memory, up to its exec. */
static char program_stack[128 * 1024] __attribute__((aligned(16)));

static long long microseconds(struct timeval t) {
    return (long long)t.tv_sec * 1000000 + t.tv_usec;
}

/* The status record's last line: how the run ended (its exit code, as this process exits),
   for the caller to read as soon as the program is reaped rather than once this process has
   exited (which tears the run's namespaces down first). Its CPU and memory are those of
   every process this one reaped. */
static void write_end(int fd, int exit_code) {
    struct rusage usage;
    if (getrusage(RUSAGE_CHILDREN, &usage) < 0) die("read the run's resource use");
    char record[160];
    int n = snprintf(record, sizeof record,
                     "{ \"exit-code\": %d, \"utime-us\": %lld, \"stime-us\": %lld, "
                     "\"maxrss-kb\": %ld }\n",
                     exit_code, microseconds(usage.ru_utime), microseconds(usage.ru_stime),
                     usage.ru_maxrss);
    if (write(fd, record, (size_t)n) != n) die("write the status");
}

/* Whether this pid 1 is the last process of its namespace, having reaped whatever else has
   ended: every process of the namespace descends from it, and one whose parent died is
   given to it, so none is left if it has no child. */
static int alone(void) {
    for (;;) {
        pid_t pid = waitpid(-1, NULL, WNOHANG);
        if (pid < 0 && errno == ECHILD) return 1;
        if (pid == 0 || (pid < 0 && errno != EINTR)) return 0;
    }
}

/* The run's pid 1, in the box with its mounts made: starts the program, writes the status
   record once the program has started, and ends with the program (the kernel then kills
   whatever the program left in the namespace). Once the program has started it keeps none of
   the run's output, so that the caller sees the end of it when the program's processes are
   gone; and once the program has been reaped and no other process is left, it writes how the
   program ended into the status record, then closes it: that hang-up is the caller's sign
   that the run is over. With processes left, it exits at once: they die with it, and the
   caller learns how the run ended from the server once it is reaped. */
static void launch(struct options *o) {
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) < 0) die("pipe");
    /* As posix_spawn does: the program shares this process's memory until its exec (this
       process waits), rather than a copy of it (a fork copies the page tables and takes a
       fault per page written after). The status descriptor is close-on-exec. */
    struct program_start start = {o, ready[1]};
    pid_t child = clone(program, program_stack + sizeof program_stack,
                        CLONE_VM | CLONE_VFORK | SIGCHLD, &start);
    if (child < 0) die("start the program");
    close(ready[1]);
    char byte;
    ssize_t got;
    do got = read(ready[0], &byte, 1);
    while (got < 0 && errno == EINTR);
    close(ready[0]);
    if (got == 1) {
        char record[64];
        int n = snprintf(record, sizeof record, "{ \"child-pid\": %d }\n", (int)o->host_pid);
        if (write(o->status_fd, record, (size_t)n) != n) die("write the status");
        /* A failure from here on is the exit code. Its stdin stays open here until the run
           has ended for good, as bubblewrap's pid 1 keeps it: a program at the other end of
           a pipe may still write to it (a broken pipe for a program gone only then). */
        close(1);
        close(2);
    } else {
        close(o->status_fd);
    }
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid == child) {
            if (got != 1) _exit(125);
            if (alone()) {
                write_end(o->status_fd, status_of(status));
                close(o->status_fd);
            }
            _exit(status_of(status));
        }
        if (pid < 0 && errno != EINTR) die("wait for the program");
    }
}

#define MAX_WAITING 64
#define MAX_FDS (4 + MAX_ITEMS)
#define MAX_TOKEN 128

struct server {
    int sock;
    struct box box;
    int self_fd; /* a pidfd of the server itself, for its runs to see it alive */
    int pid_ns;  /* the server's own pid namespace, its children's again after each run's */
};

/* A run (or a prepared run waiting for its request): its pid 1, a pidfd of it, the server's
   end of the socket pair its request goes on, and (prepared) the token it is known by. */
struct child {
    pid_t pid;
    int pidfd;
    int sock;
    char token[MAX_TOKEN];
};

/* What a prepared run has done before its request: its cgroups, its /tmp's size. */
struct prepared {
    const char *procs[MAX_ITEMS];
    int n_procs;
    unsigned long long tmpfs_bytes;
};

static void reply(int sock, const char *text) {
    if (send(sock, text, strlen(text), MSG_NOSIGNAL) < 0) die("answer the session");
}

/* One message: its text (NUL-terminated words) and its descriptors; 0 at EOF. */
static ssize_t request(int sock, char *buf, size_t size, int fds[MAX_FDS], int *n_fds) {
    struct iovec iov = {buf, size - 1};
    union {
        char space[CMSG_SPACE(MAX_FDS * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.space;
    msg.msg_controllen = sizeof control.space;
    ssize_t n;
    do n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return n;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    *n_fds = 0;
    if (c) {
        if (c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(sizeof(int))) {
            errno = EPROTO;
            die("read a request");
        }
        *n_fds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        memcpy(fds, CMSG_DATA(c), (size_t)*n_fds * sizeof(int));
    }
    if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        errno = EPROTO;
        die("read a request");
    }
    buf[n] = 0;
    return n;
}

/* `words` (NUL-separated, `size` bytes) as argv after a first word, NULL-terminated. */
static int split(char *first, char *words, ssize_t size, char **argv, int room) {
    int argc = 0;
    argv[argc++] = first;
    for (char *word = words; word < words + size; word += strlen(word) + 1) {
        if (argc == room - 1) usage("too many words in a request");
        argv[argc++] = word;
    }
    argv[argc] = NULL;
    return argc;
}

/* The sources of a request's binds, in the order `parse` reads them (which stops the run,
   with its message, at what it cannot read). */
static int bind_sources(char **argv, int argc, const char **sources) {
    int n = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) break;
        int bind = strcmp(arg, "--bind") == 0 || strcmp(arg, "--ro-bind") == 0;
        int take = bind ? 2 : strcmp(arg, "--rlimit") == 0 ? 3 : 1;
        if (i + take >= argc) break;
        if (bind && n < MAX_ITEMS) sources[n++] = argv[i + 1];
        i += take;
    }
    return n;
}

/* Hand a run its request: its pid as the host sees it, the results of copying its binds'
   mounts (0, or why not), then the words; its four descriptors, then one per bind copied.
   The copies are made here, in the host's mounts, which a run has left already. 0 if the
   run is gone (a prepared run killed before the server saw it end). */
static int send_request(int sock, pid_t pid, char *words, ssize_t size, const int stdio[4]) {
    static char *argv[4 * MAX_ITEMS + 16];
    const char *sources[MAX_ITEMS];
    int argc = split(NAME, words, size, argv, (int)(sizeof argv / sizeof argv[0]));
    int n_binds = bind_sources(argv, argc, sources);
    int fds[MAX_FDS], n_fds = 4;
    memcpy(fds, stdio, 4 * sizeof(int));
    char head[32 + 12 * MAX_ITEMS];
    int used = snprintf(head, sizeof head, "%d", (int)pid) + 1;
    head[used] = 0;
    for (int i = 0; i < n_binds; i++) {
        int fd = (int)syscall(SYS_open_tree, AT_FDCWD, sources[i],
                              OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        used += snprintf(head + used, sizeof head - (size_t)used, "%s%d", i ? "," : "",
                         fd < 0 ? errno : 0);
        if (fd >= 0) fds[n_fds++] = fd;
    }
    used += 1; /* the NUL that ends the results */
    struct iovec iov[2] = {{head, (size_t)used}, {words, (size_t)size}};
    union {
        char space[CMSG_SPACE(MAX_FDS * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr msg = {0};
    msg.msg_iov = iov;
    msg.msg_iovlen = 2;
    msg.msg_control = control.space;
    msg.msg_controllen = CMSG_SPACE((size_t)n_fds * sizeof(int));
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN((size_t)n_fds * sizeof(int));
    memcpy(CMSG_DATA(c), fds, (size_t)n_fds * sizeof(int));
    int sent = sendmsg(sock, &msg, MSG_NOSIGNAL) >= 0;
    int gone = !sent && (errno == EPIPE || errno == ECONNREFUSED || errno == ECONNRESET);
    for (int i = 4; i < n_fds; i++) close(fds[i]);
    if (!sent && !gone) die("hand a request over");
    return sent;
}

/* In a run's pid 1, its request (see `send_request`): its stdio, its cgroups, the box and
   fresh /proc and /tmp unless prepared (or /tmp again if its size differs), its binds, then
   the program. */
static void run_request(const struct server *srv, const struct prepared *prepared, char *text,
                        ssize_t size, int fds[MAX_FDS], int n_fds) {
    if (n_fds < 4) {
        errno = EPROTO;
        die("read a request");
    }
    for (int i = 0; i < 3; i++)
        if (dup2(fds[i], i) < 0) die("take descriptor %d", i);
    for (int i = 0; i < 3; i++) close(fds[i]);
    char *host_pid = text;
    char *results = host_pid + strlen(host_pid) + 1;
    char *words = results + strlen(results) + 1;
    static char *argv[4 * MAX_ITEMS + 16];
    struct options o;
    parse(split(NAME, words, size - (words - text), argv, (int)(sizeof argv / sizeof argv[0])),
          argv, &o);
    o.host_pid = (pid_t)number(host_pid, "the run's pid");
    o.status_fd = fds[3];
    int next = 4;
    for (int i = 0; i < o.n_binds; i++) {
        int why = (int)strtol(results, &results, 10);
        if (*results == ',') results++;
        if (why) {
            errno = why;
            die("copy the mount of %s", o.binds[i].source);
        }
        if (next >= n_fds) {
            errno = EPROTO;
            die("read a request");
        }
        o.binds[i].fd = fds[next++];
    }
    if (prepared == NULL) {
        join_cgroups(o.cgroups, o.n_cgroups);
        enter_box(&srv->box);
        mount_fresh(o.tmpfs_bytes);
    } else if (o.tmpfs_bytes != prepared->tmpfs_bytes) {
        if (umount2("/tmp", MNT_DETACH) < 0) die("unmount /tmp");
        mount_tmp(o.tmpfs_bytes);
    }
    mount_binds(&o);
    launch(&o);
}

/* In a forked run: it dies with the server, and starts nothing if the server died already
   (then nothing would kill it). */
static void forked(const struct server *srv) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) die("arm the parent-death signal");
    struct pollfd server = {srv->self_fd, POLLIN, 0};
    if (poll(&server, 1, 0) != 0) _exit(125); /* its pidfd is readable: the server is gone */
    close(srv->sock);
}

static struct child start_child(pid_t pid, int sock) {
    struct child c = {pid, (int)syscall(SYS_pidfd_open, pid, 0), sock, ""};
    if (c.pidfd < 0) die("open a pidfd of a run");
    return c;
}

/* A run's process, forked as pid 1 of a pid namespace of its own, and its end of the socket
   pair its request comes on. `prepared` (or NULL) is what it does before its request: it is
   made ahead, while the run before runs (or the compile before the cases), and joins its
   cgroups (on cgroup v1 joining waits for an RCU grace period), enters the box and mounts a
   fresh /proc and /tmp; the run then finds all that done. */
static struct child new_child(const struct server *srv, const struct prepared *prepared) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) die("socketpair");
    /* The next child's pid namespace is a new one; then the server's own again (glibc's fork
       rather than a raw clone: the child keeps its own view of its thread id). */
    if (unshare(CLONE_NEWPID) < 0) die("make a run's pid namespace");
    pid_t pid = fork();
    if (pid < 0) die("fork a run");
    if (pid == 0) {
        forked(srv);
        close(pair[0]);
        if (prepared != NULL) {
            /* Until its request, a failure is the run's own, not the server's to report: a
               prepared run that is gone is made again when its request comes. */
            int quiet = open("/dev/null", O_WRONLY | O_CLOEXEC);
            if (quiet < 0 || dup2(quiet, 2) < 0) _exit(125);
            close(quiet);
            join_cgroups(prepared->procs, prepared->n_procs);
            enter_box(&srv->box);
            mount_fresh(prepared->tmpfs_bytes);
        }
        static char text[65536 + 1024]; /* the session's request and the server's head */
        int fds[MAX_FDS], n_fds = 0;
        ssize_t got = request(pair[1], text, sizeof text, fds, &n_fds);
        if (got <= 0) _exit(0); /* never used */
        close(pair[1]);
        run_request(srv, prepared, text, got, fds, n_fds);
    }
    if (setns(srv->pid_ns, CLONE_NEWPID) < 0) die("return to the server's pid namespace");
    close(pair[1]);
    return start_child(pid, pair[0]);
}

static void end_child(struct child *c, int kill_it) {
    if (c->pid <= 0) return;
    if (kill_it) kill(c->pid, SIGKILL);
    close(c->pidfd);
    if (c->sock >= 0) close(c->sock);
    while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR) {}
    c->pid = 0;
}

static void report(int sock, struct child *run) {
    int status;
    struct rusage usage;
    while (wait4(run->pid, &status, 0, &usage) < 0)
        if (errno != EINTR) die("wait for a run");
    close(run->pidfd);
    if (run->sock >= 0) close(run->sock);
    run->pid = 0;
    char line[96];
    snprintf(line, sizeof line, "exit %d %lld %lld %ld", status, microseconds(usage.ru_utime),
             microseconds(usage.ru_stime), usage.ru_maxrss);
    reply(sock, line);
}

/* The runs prepared ahead, oldest first. */
struct waiting {
    struct child runs[MAX_WAITING];
    int n;
};

static void forget(struct waiting *w, int i, int kill_it) {
    end_child(&w->runs[i], kill_it);
    memmove(&w->runs[i], &w->runs[i + 1], (size_t)(w->n - i - 1) * sizeof w->runs[0]);
    w->n--;
}

/* "prepare TOKEN [--tmpfs N] [--cgroup PROCS]...": a run made ahead, known by TOKEN. */
static void prepare(const struct server *srv, struct waiting *w, char *words, ssize_t size) {
    static char *argv[4 * MAX_ITEMS + 16];
    int argc = split(NAME, words, size, argv, (int)(sizeof argv / sizeof argv[0]));
    if (argc < 2 || strlen(argv[1]) >= MAX_TOKEN) usage("prepare: a token first");
    struct prepared prepared = {.n_procs = 0};
    for (int i = 2; i < argc; i += 2) {
        if (i + 1 >= argc) usage(argv[i]);
        if (strcmp(argv[i], "--tmpfs") == 0)
            prepared.tmpfs_bytes = (unsigned long long)number(argv[i + 1], argv[i]);
        else if (strcmp(argv[i], "--cgroup") == 0 && prepared.n_procs < MAX_ITEMS)
            prepared.procs[prepared.n_procs++] = argv[i + 1];
        else usage(argv[i]);
    }
    if (w->n == MAX_WAITING) forget(w, 0, 1); /* the oldest makes room */
    struct child *c = &w->runs[w->n++];
    *c = new_child(srv, &prepared);
    snprintf(c->token, sizeof c->token, "%s", argv[1]);
}

/* One message of the session: "run" or "prepared TOKEN" (with four descriptors), or
   "prepare TOKEN ...". A prepared run that is gone (or never was) is made now instead. */
static void handle(struct server *srv, struct child *run, struct waiting *w, char *text,
                   ssize_t size, int fds[MAX_FDS], int n_fds) {
    size_t head = strlen(text) + 1;
    char *words = text + head;
    ssize_t rest = size - (ssize_t)head;
    if (strcmp(text, "prepare") == 0 && n_fds == 0) {
        prepare(srv, w, words, rest);
        return;
    }
    if (strcmp(text, "kill") == 0 && n_fds == 0) { /* the run ends; its report follows */
        if (run->pid > 0) kill(run->pid, SIGKILL);
        return;
    }
    int prepared = strcmp(text, "prepared") == 0;
    if (n_fds != 4 || run->pid > 0 || (!prepared && strcmp(text, "run") != 0) ||
        (prepared && rest <= 0)) {
        errno = EPROTO;
        die("take a request");
    }
    int found = -1;
    if (prepared) {
        for (int i = 0; i < w->n && found < 0; i++)
            if (strcmp(w->runs[i].token, words) == 0) found = i;
        size_t token = strlen(words) + 1;
        words += token;
        rest -= (ssize_t)token;
    }
    struct pollfd ended = {found >= 0 ? w->runs[found].pidfd : -1, POLLIN, 0};
    if (found >= 0 && poll(&ended, 1, 0) != 0) { /* it died, and its end is not seen yet */
        forget(w, found, 0);
        found = -1;
    }
    if (found >= 0) {
        *run = w->runs[found];
        w->runs[found].pid = 0;
        forget(w, found, 0);
        if (!send_request(run->sock, run->pid, words, rest, fds)) {
            end_child(run, 1); /* died before its run: made now instead */
            found = -1;
        }
    }
    if (found < 0) {
        *run = new_child(srv, NULL);
        if (!send_request(run->sock, run->pid, words, rest, fds)) {
            errno = EPIPE;
            die("hand a request over");
        }
    }
    for (int i = 0; i < 4; i++) close(fds[i]);
}

static void serve(int argc, char **argv) {
    struct server srv = {.sock = -1, .box = {-1, -1, -1}};
    pid_t parent = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *arg = argv[i];
        if (strcmp(arg, "--serve") == 0) srv.sock = (int)number(argv[i + 1], arg);
        else if (strcmp(arg, "--parent") == 0) parent = (pid_t)number(argv[i + 1], arg);
        else if (strcmp(arg, "--mnt-fd") == 0) srv.box.mnt_fd = (int)number(argv[i + 1], arg);
        else if (strcmp(arg, "--net-fd") == 0) srv.box.net_fd = (int)number(argv[i + 1], arg);
        else if (strcmp(arg, "--uts-fd") == 0) srv.box.uts_fd = (int)number(argv[i + 1], arg);
        else usage(arg);
    }
    if (srv.sock < 0 || parent <= 0 || srv.box.mnt_fd < 0)
        usage("--serve, --parent and --mnt-fd are required");
    int parent_fd = (int)syscall(SYS_pidfd_open, parent, 0);
    if (parent_fd < 0 || getppid() != parent) _exit(125); /* the caller is gone: serve nothing */
    srv.self_fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    if (srv.self_fd < 0) die("open a pidfd of the server");
    srv.pid_ns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
    if (srv.pid_ns < 0) die("hold the server's pid namespace");
    drop_bounding_set(); /* once for every run: root here keeps its effective capabilities */
    struct child run = {0, -1, -1, ""};
    static struct waiting w;
    static char text[65536];
    for (;;) {
        struct pollfd watch[3 + MAX_WAITING] = {{parent_fd, POLLIN, 0}, {srv.sock, POLLIN, 0},
                                                {run.pid > 0 ? run.pidfd : -1, POLLIN, 0}};
        for (int i = 0; i < w.n; i++) watch[3 + i] = (struct pollfd){w.runs[i].pidfd, POLLIN, 0};
        if (poll(watch, (nfds_t)(3 + w.n), -1) < 0) {
            if (errno == EINTR) continue;
            die("wait for the session");
        }
        if (watch[0].revents) { /* the session's process is gone: so is all it started */
            end_child(&run, 1);
            while (w.n) forget(&w, w.n - 1, 1);
            _exit(0);
        }
        for (int i = w.n - 1; i >= 0; i--) /* prepared runs killed before use */
            if (watch[3 + i].revents) forget(&w, i, 0);
        if (watch[2].revents) report(srv.sock, &run);
        if (!watch[1].revents) continue;
        int fds[MAX_FDS], n_fds = 0;
        ssize_t size = request(srv.sock, text, sizeof text, fds, &n_fds);
        if (size <= 0) { /* the session closed */
            end_child(&run, 1);
            while (w.n) forget(&w, w.n - 1, 1);
            _exit(size == 0 ? 0 : 125);
        }
        handle(&srv, &run, &w, text, size, fds, n_fds);
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--serve") == 0) serve(argc, argv);
    usage("the launcher serves a session: --serve FD --parent PID and the box's descriptors");
}
