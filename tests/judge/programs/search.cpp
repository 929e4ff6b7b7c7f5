// A search-style packer: tries shelf widths around sqrt(area) for about 0.3 s of
// CPU and keeps the smallest rectangle (pieces at bounding-box origins, unrotated).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <vector>
int n;
std::vector<long long> minx, miny, w, h;
std::vector<int> order;
long long pack(long long limit, std::vector<long long> *X, std::vector<long long> *Y, long long *W, long long *H) {
    long long x = 0, y = 0, shelf = 0, width = 0;
    for (int i : order) {
        if (x > 0 && x + w[i] > limit) { y += shelf; x = 0; shelf = 0; }
        if (X) { (*X)[i] = x - minx[i]; (*Y)[i] = y - miny[i]; }
        x += w[i];
        shelf = std::max(shelf, h[i]);
        width = std::max(width, x);
    }
    *W = width; *H = y + shelf;
    return width * (y + shelf);
}
int main() {
    if (scanf("%d", &n) != 1) return 1;
    minx.resize(n); miny.resize(n); w.resize(n); h.resize(n); order.resize(n);
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
        order[i] = i;
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return h[a] > h[b]; });
    long long base = (long long)std::ceil(std::sqrt((double)area));
    long long best_limit = base, W, H, best = pack(base, nullptr, nullptr, &W, &H);
    const clock_t budget = (clock_t)(0.3 * CLOCKS_PER_SEC);
    clock_t start = clock();
    unsigned long long seed = 88172645463325252ULL;
    while (clock() - start < budget) {
        seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
        long long limit = base / 2 + (long long)(seed % (unsigned long long)(base + 1));
        long long a = pack(limit, nullptr, nullptr, &W, &H);
        if (a < best) { best = a; best_limit = limit; }
    }
    std::vector<long long> X(n), Y(n);
    pack(best_limit, &X, &Y, &W, &H);
    printf("%lld %lld\n", W, H);
    for (int i = 0; i < n; i++) printf("%lld %lld 0 0\n", X[i], Y[i]);
    return 0;
}
