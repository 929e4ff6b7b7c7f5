// Shelf packer: pieces at their bounding-box origins, tallest first, on shelves
// whose width is about the square root of the total bounding-box area.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>
int main() {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    std::vector<long long> minx(n), miny(n), w(n), h(n), X(n), Y(n);
    long long area = 0;
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
        minx[i] = lx; miny[i] = ly; w[i] = hx - lx + 1; h[i] = hy - ly + 1;
        area += w[i] * h[i];
    }
    std::vector<int> order(n);
    for (int i = 0; i < n; i++) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return h[a] > h[b]; });
    long long limit = (long long)std::ceil(std::sqrt((double)area));
    long long x = 0, y = 0, shelf = 0, width = 0;
    for (int i : order) {
        if (x > 0 && x + w[i] > limit) { y += shelf; x = 0; shelf = 0; }
        X[i] = x - minx[i];
        Y[i] = y - miny[i];
        x += w[i];
        shelf = std::max(shelf, h[i]);
        width = std::max(width, x);
    }
    printf("%lld %lld\n", width, y + shelf);
    for (int i = 0; i < n; i++) printf("%lld %lld 0 0\n", X[i], Y[i]);
    return 0;
}
