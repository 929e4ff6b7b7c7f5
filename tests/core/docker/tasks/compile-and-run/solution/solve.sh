#!/bin/bash
set -euo pipefail
cat > /app/sum.cpp <<'CPP'
#include <fstream>
#include <iostream>
int main() {
    std::ifstream in("/app/numbers.txt");
    long total = 0, value = 0;
    while (in >> value) total += value;
    std::cout << total << "\n";
}
CPP
g++ -O2 -o /app/sum /app/sum.cpp
/app/sum > /app/answer.txt
