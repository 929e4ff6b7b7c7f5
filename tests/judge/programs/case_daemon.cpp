// Case isolation: refuses to answer where it sees any process but its own (and the box's
// pid 1), then leaves a detached daemon that spins and, after 300 ms, floods its stdout.
// A daemon that outlived its case would spoil that case's output or be seen by the next.
// Otherwise the single-row packing of row.cpp.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <unistd.h>
#include <vector>
static int others() {
    int found = 0;
    DIR *proc = opendir("/proc");
    if (!proc) return 1;
    while (dirent *entry = readdir(proc)) {
        if (!isdigit((unsigned char)entry->d_name[0])) continue;
        int pid = atoi(entry->d_name);
        if (pid != 1 && pid != getpid()) found++;
    }
    closedir(proc);
    return found;
}
static void leave_a_daemon() {
    fflush(stdout);
    if (fork() != 0) return;
    setsid();
    if (fork() != 0) _exit(0);
    usleep(300 * 1000);
    for (volatile unsigned long spin = 0;; spin++)
        if (spin % 1000000 == 0) printf("garbage from a daemon\n"), fflush(stdout);
}
int main() {
    if (others() != 0) {
        printf("0 0\n");
        return 0;
    }
    int n;
    if (scanf("%d", &n) != 1) return 1;
    std::vector<long long> X(n), Y(n);
    long long cursor = 0, height = 0;
    for (int i = 0; i < n; i++) {
        int k;
        scanf("%d", &k);
        long long minx = 1 << 30, maxx = -(1 << 30), miny = 1 << 30, maxy = -(1 << 30);
        for (int j = 0; j < k; j++) {
            long long x, y;
            scanf("%lld %lld", &x, &y);
            minx = std::min(minx, x); maxx = std::max(maxx, x);
            miny = std::min(miny, y); maxy = std::max(maxy, y);
        }
        X[i] = cursor - minx;
        Y[i] = -miny;
        cursor += maxx - minx + 1;
        height = std::max(height, maxy - miny + 1);
    }
    leave_a_daemon();
    printf("%lld %lld\n", cursor, height);
    for (int i = 0; i < n; i++) printf("%lld %lld 0 0\n", X[i], Y[i]);
    return 0;
}
