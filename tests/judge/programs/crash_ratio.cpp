// Prints a valid-looking packing and a perfect "Ratio: 1" to stderr, then crashes.
// A judge that searches a failing program's own output for a score is fooled.
#include <cstdio>
#include <cstdlib>
int main() {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    printf("1 1\n");
    fprintf(stderr, "Ratio: 1\nRatio: 1.000000000\n");
    fflush(stdout);
    fflush(stderr);
    abort();
}
