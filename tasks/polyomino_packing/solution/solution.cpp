// Seed candidate for Polyomino Packing: a single row of pieces.
//
// Every piece keeps its given orientation (R = 0, F = 0) and is shifted so
// that its bounding box starts at the current cursor on the x axis and at
// y = 0; the cursor then moves right by the piece's bounding-box width. The
// rectangle is the total width by the tallest piece. Always valid, never
// good: it is the starting point that the search improves on.
#include <algorithm>
#include <cstdio>
#include <vector>

int main() {
    int n;
    if (std::scanf("%d", &n) != 1) return 1;
    std::vector<long long> xs(n), ys(n);
    long long cursor = 0, height = 0;
    for (int i = 0; i < n; ++i) {
        int k;
        if (std::scanf("%d", &k) != 1) return 1;
        long long min_x = 0, max_x = 0, min_y = 0, max_y = 0;
        for (int j = 0; j < k; ++j) {
            long long x, y;
            if (std::scanf("%lld %lld", &x, &y) != 2) return 1;
            if (j == 0) {
                min_x = max_x = x;
                min_y = max_y = y;
            }
            min_x = std::min(min_x, x);
            max_x = std::max(max_x, x);
            min_y = std::min(min_y, y);
            max_y = std::max(max_y, y);
        }
        xs[i] = cursor - min_x;
        ys[i] = -min_y;
        cursor += max_x - min_x + 1;
        height = std::max(height, max_y - min_y + 1);
    }
    std::printf("%lld %lld\n", cursor, height);
    for (int i = 0; i < n; ++i) std::printf("%lld %lld 0 0\n", xs[i], ys[i]);
    return 0;
}
