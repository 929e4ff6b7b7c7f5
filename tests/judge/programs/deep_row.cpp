// The single-row packer, after a recursion about 90 MiB deep: the authority's
// stack limit is its memory limit (256 MiB), not the usual 8 MiB.
#include <algorithm>
#include <cstdio>
#include <vector>
static int deep(int n) {
    volatile char pad[200];
    pad[n % 200] = (char)n;
    if (n == 0) return pad[0];
    int r = deep(n - 1);
    return r + pad[n % 200] - (char)n;
}
int main() {
    if (deep(400000) != 0) return 2;
    int n;
    if (scanf("%d", &n) != 1) return 1;
    std::vector<long long> X(n), Y(n);
    long long cursor = 0, height = 0;
    for (int i = 0; i < n; i++) {
        int k;
        scanf("%d", &k);
        long long lx = 1 << 30, hx = -(1 << 30), ly = 1 << 30, hy = -(1 << 30);
        for (int j = 0; j < k; j++) {
            long long x, y;
            scanf("%lld %lld", &x, &y);
            lx = std::min(lx, x); hx = std::max(hx, x);
            ly = std::min(ly, y); hy = std::max(hy, y);
        }
        X[i] = cursor - lx; Y[i] = -ly;
        cursor += hx - lx + 1;
        height = std::max(height, hy - ly + 1);
    }
    printf("%lld %lld\n", cursor, height);
    for (int i = 0; i < n; i++) printf("%lld %lld 0 0\n", X[i], Y[i]);
    return 0;
}
