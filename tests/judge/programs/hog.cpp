// Allocates and touches 1 GiB in 64 MiB steps, four times the memory limit.
#include <cstdio>
#include <cstring>
int main() {
    const size_t chunk = 64u << 20;
    for (int i = 0; i < 16; i++) {
        char *p = new char[chunk];
        memset(p, i + 1, chunk);
    }
    printf("1 1\n");
    return 0;
}
