// Forks without end.
#include <unistd.h>
int main() {
    for (;;) fork();
}
