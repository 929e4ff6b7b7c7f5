// Reserves 512 MiB but touches only one page of it. Under the authority's
// address-space limit (256 MiB) the reservation itself fails.
#include <cstdio>
char *volatile kept;
int main(int argc, char **) {
    kept = new char[(512u << 20) + argc];
    kept[0] = 1;
    printf("%d\n", kept[0]);
    return 0;
}
