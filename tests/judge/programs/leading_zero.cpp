// A row packing whose W is written with a leading zero: a presentation error.
#include <algorithm>
#include <cstdio>
#include <vector>
int main() {
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
    printf("0%lld %lld\n", cursor, height);
    for (int i = 0; i < n; i++) printf("%lld %lld 0 0\n", X[i], Y[i]);
    return 0;
}
