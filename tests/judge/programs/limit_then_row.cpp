// Per-case limits in a shared box: on the small set's first case (n < 1000) it crosses
// the limit LIMIT names -- 0 memory (touches 1 GiB), 1 CPU time (spins), 2 processes
// (leaves 100 sleeping children, then answers) -- and on the next case it uses that
// case's whole budget: 120 children at once, then 200 MiB touched. A test prepends
// `#define LIMIT n`. Then the single-row packing of row.cpp.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>
#ifndef LIMIT
#define LIMIT 0
#endif
static char *volatile kept;  // where touched memory escapes to, so that it is really touched
static void touch(size_t bytes, int value) {
    kept = new char[bytes];
    memset(kept, value, bytes);
}
static void cross_the_limit() {
    if (LIMIT == 0) {  // memory
        for (int i = 0; i < 16; i++) touch(64u << 20, i + 1);
    } else if (LIMIT == 1) {  // cpu
        for (volatile unsigned long spin = 0;; spin++) {}
    } else {  // processes: 100 children outlive this case
        for (int i = 0; i < 100; i++)
            if (fork() == 0) { sleep(60); _exit(0); }
    }
}
static bool use_the_budget() {
    std::vector<pid_t> children;
    for (int i = 0; i < 120; i++) {
        pid_t child = fork();
        if (child < 0) return false;
        if (child == 0) { usleep(100 * 1000); _exit(0); }
        children.push_back(child);
    }
    for (pid_t child : children) waitpid(child, nullptr, 0);
    touch(200u << 20, 7);
    return true;
}
int main() {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    if (n < 1000) cross_the_limit();
    else if (!use_the_budget()) { printf("0 0\n"); return 0; }
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
    printf("%lld %lld\n", cursor, height);
    for (int i = 0; i < n; i++) printf("%lld %lld 0 0\n", X[i], Y[i]);
    return 0;
}
