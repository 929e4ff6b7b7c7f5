// Sizes its input as FrontierCS problem 47's first model solution does
// (seekg to the end, tellg, reserve), reads it whole, then packs every piece
// in one row as row.cpp does. On a pipe tellg() is -1 and reserve() throws
// std::length_error; on a file (the authority's stdin) it scores as row.cpp.
#include <algorithm>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>
int main() {
    std::cin.seekg(0, std::ios::end);
    std::string input;
    input.reserve(std::cin.tellg());
    std::cin.seekg(0, std::ios::beg);
    input.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    std::istringstream in(input);
    int n;
    if (!(in >> n)) return 1;
    std::vector<long long> X(n), Y(n);
    long long cursor = 0, height = 0;
    for (int i = 0; i < n; i++) {
        int k;
        in >> k;
        long long minx = 1 << 30, maxx = -(1 << 30), miny = 1 << 30, maxy = -(1 << 30);
        for (int j = 0; j < k; j++) {
            long long x, y;
            in >> x >> y;
            minx = std::min(minx, x); maxx = std::max(maxx, x);
            miny = std::min(miny, y); maxy = std::max(maxy, y);
        }
        X[i] = cursor - minx;
        Y[i] = -miny;
        cursor += maxx - minx + 1;
        height = std::max(height, maxy - miny + 1);
    }
    std::cout << cursor << ' ' << height << '\n';
    for (int i = 0; i < n; i++) std::cout << X[i] << ' ' << Y[i] << " 0 0\n";
    return 0;
}
