// The single-row packer that logs 2 MiB to stderr and pads its answer with
// 8 MiB of blank lines: both within the authority's output caps.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>
int main() {
    std::string log(1024, 'd');
    for (int i = 0; i < 2048; i++) fprintf(stderr, "%s\n", log.c_str());
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
    std::string blank(1 << 20, '\n');
    for (int i = 0; i < 8; i++) fwrite(blank.data(), 1, blank.size(), stdout);
    return 0;
}
