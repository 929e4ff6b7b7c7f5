// Maps its whole input (fstat for the size, mmap of descriptor 0), then packs
// every piece in one row as row.cpp does. A pipe has no size and cannot be
// mapped: then it says so and exits 1; on a file (the authority's stdin) it
// scores as row.cpp.
#include <sys/mman.h>
#include <sys/stat.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
static const char *cursor_in, *end_in;
static long long next_number() {
    while (cursor_in < end_in && (*cursor_in < '0' || *cursor_in > '9') && *cursor_in != '-') cursor_in++;
    bool negative = cursor_in < end_in && *cursor_in == '-';
    if (negative) cursor_in++;
    long long value = 0;
    while (cursor_in < end_in && *cursor_in >= '0' && *cursor_in <= '9') value = value * 10 + (*cursor_in++ - '0');
    return negative ? -value : value;
}
int main() {
    struct stat st;
    if (fstat(0, &st) != 0 || st.st_size <= 0) { fprintf(stderr, "stdin has no size\n"); return 1; }
    void *mapped = mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, 0, 0);
    if (mapped == MAP_FAILED) { perror("mmap stdin"); return 1; }
    cursor_in = static_cast<const char *>(mapped);
    end_in = cursor_in + st.st_size;
    int n = next_number();
    std::vector<long long> X(n), Y(n);
    long long cursor = 0, height = 0;
    for (int i = 0; i < n; i++) {
        int k = next_number();
        long long minx = 1 << 30, maxx = -(1 << 30), miny = 1 << 30, maxy = -(1 << 30);
        for (int j = 0; j < k; j++) {
            long long x = next_number(), y = next_number();
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
