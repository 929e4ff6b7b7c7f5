// Touches 1 GiB, four times the memory limit.
#include <cstdio>
#include <cstdlib>
#include <cstring>
int main() {
    const size_t chunk = 64u << 20;
    for (int i = 0; i < 16; i++) {
        char *p = (char *)malloc(chunk);
        if (!p) return 3;
        memset(p, i + 1, chunk);
    }
    printf("1 1\n");
    return 0;
}
