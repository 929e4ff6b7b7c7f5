// Uses every rotation and reflection: piece i gets R = i % 4 and F = (i / 4) % 2,
// transformed as documented (reflect x -> -x, then R clockwise quarter turns
// (x, y) -> (y, -x), then translate), and the results sit side by side in a row.
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
        int r = i % 4, f = (i / 4) % 2;
        long long lx = 1 << 30, hx = -(1 << 30), ly = 1 << 30, hy = -(1 << 30);
        for (int j = 0; j < k; j++) {
            long long x, y;
            scanf("%lld %lld", &x, &y);
            if (f) x = -x;
            for (int t = 0; t < r; t++) { long long nx = y, ny = -x; x = nx; y = ny; }
            lx = std::min(lx, x); hx = std::max(hx, x);
            ly = std::min(ly, y); hy = std::max(hy, y);
        }
        X[i] = cursor - lx;
        Y[i] = -ly;
        cursor += hx - lx + 1;
        height = std::max(height, hy - ly + 1);
    }
    printf("%lld %lld\n", cursor, height);
    for (int i = 0; i < n; i++) printf("%lld %lld %d %d\n", X[i], Y[i], i % 4, (i / 4) % 2);
    return 0;
}
