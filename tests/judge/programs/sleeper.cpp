// Uses no CPU and never finishes.
#include <unistd.h>
int main() {
    for (;;) pause();
}
