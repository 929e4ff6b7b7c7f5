"""A small FrontierCS checkout made by the tests: our own problems in the authority's layout.

Nothing here comes from FrontierCS. The checkers and the interactor are
written for these tests and follow testlib's conventions without testlib:
run as `chk in.txt out.txt ans.txt` (`interactor in.txt tout.txt ans.txt`),
verdict on stderr, exit 0 ok, 1 wrong answer, 2 presentation error, 3 FAIL,
7 points with `Ratio: x` in the message.

- `sum` (checker): print a + b. Exact: ok. Off by at most 10: points, ratio
  1 - |diff| / 20. Further off: wrong answer, though the message still says
  `Ratio: 0.25` (the authority takes it). Not an integer: FAIL.
- `guess` (interactive): find a secret in [1, n] by asking `? x` (the
  interactor answers `<`, `>` or `=`), then say `! x`. Ratio: 1 within
  ceil(log2 n) + 1 questions, else that bound over the questions asked.
- `stall` (interactive): an interactor that never answers and ignores the
  end of its input, to show that nothing waits forever.
- broken problems, each set aside with a message: an unknown type, a missing
  checker, a missing test input, a missing answer file.
- `uncompilable`, `hungry`: a checker that does not compile, and one that
  exceeds its own memory limit (both infrastructure errors, never scores);
  `crashy`: a checker that dies of a signal (a checker failure, as at the
  authority: the case is not OK and earns what its message says).
"""

from __future__ import annotations

from pathlib import Path

SUM_CHECKER = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
int main(int argc, char** argv) {
    if (argc < 4) { fprintf(stderr, "FAIL usage: chk in out ans\n"); return 3; }
    FILE* in = fopen(argv[1], "r"); FILE* out = fopen(argv[2], "r"); FILE* ans = fopen(argv[3], "r");
    long long a, b, expected, got;
    if (!in || !ans || fscanf(in, "%lld %lld", &a, &b) != 2 || fscanf(ans, "%lld", &expected) != 1) {
        fprintf(stderr, "FAIL cannot read the test\n"); return 3;
    }
    char token[64];
    if (!out || fscanf(out, "%63s", token) != 1) { fprintf(stderr, "wrong output format empty\n"); return 2; }
    char* end; got = strtoll(token, &end, 10);
    if (*end != 0) { fprintf(stderr, "FAIL expected an integer, found '%s'\n", token); return 3; }
    long long diff = got > expected ? got - expected : expected - got;
    if (diff == 0) { fprintf(stderr, "ok the sum is %lld\n", got); return 0; }
    if (diff <= 10) {
        fprintf(stderr, "points %.4f off by %lld. Ratio: %.4f, RatioUnbounded: %.4f\n",
                1.0 - diff / 20.0, diff, 1.0 - diff / 20.0, 2.0 - diff / 20.0);
        return 7;
    }
    fprintf(stderr, "wrong answer %lld is not %lld. Ratio: 0.25\n", got, expected);
    return 1;
}
"""

GUESS_INTERACTOR = r"""
#include <cstdio>
#include <cstring>
int main(int argc, char** argv) {
    FILE* in = fopen(argv[1], "r"); FILE* ans = fopen(argv[3], "r");
    long long n, secret;
    if (!in || !ans || fscanf(in, "%lld", &n) != 1 || fscanf(ans, "%lld", &secret) != 1) {
        fprintf(stderr, "FAIL cannot read the test\n"); return 3;
    }
    int bound = 1; while ((1LL << (bound - 1)) < n) bound++;
    printf("%lld\n", n); fflush(stdout);
    long long asked = 0; char what[8]; long long x;
    while (true) {
        if (scanf("%7s %lld", what, &x) != 2) {
            fprintf(stderr, "wrong output format unexpected end of file\n"); return 2;
        }
        if (strcmp(what, "!") == 0) {
            if (x != secret) { fprintf(stderr, "wrong answer %lld is not the secret\n", x); return 1; }
            double ratio = asked <= bound ? 1.0 : (double)bound / asked;
            fprintf(stderr, "points %.4f found in %lld questions. Ratio: %.4f\n", ratio, asked, ratio);
            return 7;
        }
        if (strcmp(what, "?") != 0) { fprintf(stderr, "wrong output format '%s'\n", what); return 2; }
        if (++asked > 100000) { fprintf(stderr, "wrong answer too many questions. Ratio: 0\n"); return 1; }
        printf("%s\n", x < secret ? "<" : x > secret ? ">" : "=");
        fflush(stdout);
    }
}
"""

STALL_INTERACTOR = r"""
#include <cstdio>
#include <unistd.h>
int main() {
    printf("5\n"); fflush(stdout);
    while (true) pause();  // never answers, never notices the end of its input
}
"""

HUNGRY_CHECKER = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
int main() {
    for (int i = 0; i < 64; i++) {  // 1 GiB, touched: far over the checker's 256 MiB
        char* block = (char*)malloc(16 << 20);
        if (block) memset(block, 1, 16 << 20);
    }
    fprintf(stderr, "ok\n");
    return 0;
}
"""

CRASHING_CHECKER = r"""
#include <csignal>
#include <cstdio>
int main() { fprintf(stderr, "about to fail. Ratio: 0.5\n"); fflush(stderr); raise(SIGSEGV); }
"""

# Programs, by name.
SUM_RIGHT = (
    '#include <cstdio>\nint main(){long long a,b;scanf("%lld %lld",&a,&b);printf("%lld\\n",a+b);}\n'
)
SUM_OFF_BY_5 = SUM_RIGHT.replace("a+b", "a+b+5")
SUM_FAR_OFF = SUM_RIGHT.replace("a+b", "a+b+1000")
SUM_WORDS = '#include <cstdio>\nint main(){printf("forty-two\\n");}\n'
SUM_CRASH_CLAIMING_RATIO = (
    '#include <cstdio>\n#include <cstdlib>\nint main(){fprintf(stderr,"Ratio: 1\\n");abort();}\n'
)
SUM_SPIN = "int main(){volatile unsigned long long x=0; for(;;) x++;}\n"
# Size the input before reading it: seekg/tellg (as FrontierCS problem 47's model
# solution does) and fstat + mmap. On a pipe tellg() is -1 (reserve throws) and
# fstat's size is 0 (nothing to map); on a file both read the whole input.
SUM_SEEK = r"""
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
int main() {
    std::cin.seekg(0, std::ios::end);
    std::string input;
    input.reserve(std::cin.tellg());
    std::cin.seekg(0, std::ios::beg);
    input.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    std::istringstream in(input);
    long long a, b;
    in >> a >> b;
    std::cout << a + b << "\n";
}
"""
SUM_MMAP = r"""
#include <sys/mman.h>
#include <sys/stat.h>
#include <cstdio>
#include <string>
int main() {
    struct stat st;
    if (fstat(0, &st) != 0 || st.st_size <= 0) { fprintf(stderr, "stdin has no size\n"); return 1; }
    void* mapped = mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, 0, 0);
    if (mapped == MAP_FAILED) { perror("mmap stdin"); return 1; }
    std::string input(static_cast<const char*>(mapped), st.st_size);
    long long a, b;
    if (sscanf(input.c_str(), "%lld %lld", &a, &b) != 2) return 1;
    printf("%lld\n", a + b);
}
"""
SUM_SILENT = "int main(){}\n"

GUESS_BINARY = r"""
#include <cstdio>
int main() {
    long long n; scanf("%lld", &n);
    long long lo = 1, hi = n;
    while (true) {
        long long mid = (lo + hi) / 2; char reply[4];
        printf("? %lld\n", mid); fflush(stdout);
        scanf("%3s", reply);
        if (reply[0] == '=') { printf("! %lld\n", mid); fflush(stdout); return 0; }
        if (reply[0] == '<') lo = mid + 1; else hi = mid - 1;
    }
}
"""
GUESS_LINEAR = r"""
#include <cstdio>
int main() {
    long long n; scanf("%lld", &n);
    for (long long x = 1; x <= n; x++) {
        char reply[4];
        printf("? %lld\n", x); fflush(stdout);
        scanf("%3s", reply);
        if (reply[0] == '=') { printf("! %lld\n", x); fflush(stdout); return 0; }
    }
}
"""
# Binary search after a pause of 0.8 s (wall time, no CPU) before its first read.
GUESS_AFTER_A_PAUSE = GUESS_BINARY.replace(
    "#include <cstdio>\n", "#include <cstdio>\n#include <unistd.h>\n"
).replace('long long n; scanf("%lld", &n);', 'usleep(800000);\n    long long n; scanf("%lld", &n);')
GUESS_BLIND = '#include <cstdio>\nint main(){printf("! 1\\n");fflush(stdout);}\n'
# Reads the interactor's first line, answers and leaves: whatever the interactor does next
# happens after the program is gone (no race with the interactor's first write).
GUESS_READ_ONCE = '#include <cstdio>\nint main(){long long n; scanf("%lld",&n); printf("! 1\\n"); fflush(stdout);}\n'
GUESS_SILENT = '#include <cstdio>\nint main(){long long n; scanf("%lld",&n); for(;;){}}\n'
GUESS_SLEEPER = (
    "#include <cstdio>\n#include <unistd.h>\n"
    'int main(){long long n; scanf("%lld",&n); for(;;) pause();}\n'
)
# Binary search, but only over a pipe: a stdin that is a file (a dialogue cannot be
# one) makes it give up with a wrong guess.
GUESS_ONLY_THROUGH_A_PIPE = GUESS_BINARY.replace(
    "#include <cstdio>\n",
    "#include <cstdio>\n#include <sys/stat.h>\n",
).replace(
    'long long n; scanf("%lld", &n);',
    "struct stat st; fstat(0, &st);\n"
    '    if (!S_ISFIFO(st.st_mode)) { printf("! -1\\n"); fflush(stdout); return 0; }\n'
    '    long long n; scanf("%lld", &n);',
)
GUESS_FLOOD = '#include <cstdio>\nint main(){for(;;){fputs("? 1\\n",stdout);}}\n'

SECRETS = {1: (100, 37), 2: (1000, 1), 3: (1000, 777)}  # case: (n, secret)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_checkout(root: Path) -> Path:
    """A checkout of our own problems under `root`; returns `root`."""
    algorithmic = root / "algorithmic"
    # Our checkers do not include it; the checkout layout has it, and its digest keys the cache.
    write(algorithmic / "judge" / "include" / "testlib.h", "// headers of this test checkout\n")
    problems = algorithmic / "problems"

    sum_dir = problems / "sum"
    # A byte-order mark, a key the authority ignores (a typo of real configs), two
    # subtasks numbered on, the second with its own time limit.
    write(
        sum_dir / "config.yaml",
        "\ufefftype: default\nchecker: chk.cc\ncheker_type: testlib\ntime: 1s\nmemory: 64m\n"
        "subtasks:\n  - score: 60\n    n_cases: 2\n  - score: 40\n    n_cases: 1\n    time: 500ms\n",
    )
    write(sum_dir / "statement.txt", "A Plus B\n\nPrint the sum of two integers.\n")
    write(sum_dir / "chk.cc", SUM_CHECKER)
    for number, (a, b) in enumerate([(1, 2), (40, 2), (-5, 1000)], start=1):
        write(sum_dir / "testdata" / f"{number}.in", f"{a} {b}\n")
        write(sum_dir / "testdata" / f"{number}.ans", f"{a + b}\n")

    guess = problems / "guess"
    write(
        guess / "config.yaml",
        "type: interactive\ninteractor: interactor.cc\ntime: 1s\nmemory: 64m\n"
        "subtasks:\n  - score: 100\n    n_cases: 3\n",
    )
    write(guess / "statement.txt", "Guess the Number\n\nThis is an interactive problem.\n")
    write(guess / "interactor.cc", GUESS_INTERACTOR)
    for number, (n, secret) in SECRETS.items():
        write(guess / "testdata" / f"{number}.in", f"{n}\n")
        write(guess / "testdata" / f"{number}.ans", f"{secret}\n")

    stall = problems / "stall"
    write(
        stall / "config.yaml",
        "type: interactive\ntime: 0.5s\nmemory: 64m\nsubtasks:\n  - score: 100\n    n_cases: 1\n",
    )
    write(stall / "statement.txt", "Stall\n")
    write(stall / "interactor.cc", STALL_INTERACTOR)
    write(stall / "testdata" / "1.in", "5\n")
    write(stall / "testdata" / "1.ans", "3\n")

    for name, source in (
        ("uncompilable", "int main( {\n"),
        ("hungry", HUNGRY_CHECKER),
        ("crashy", CRASHING_CHECKER),
    ):
        broken = problems / name
        write(
            broken / "config.yaml",
            "time: 1s\nmemory: 64m\nsubtasks:\n  - score: 100\n    n_cases: 1\n",
        )
        write(broken / "statement.txt", f"{name}\n")
        write(broken / "chk.cc", source)
        write(broken / "testdata" / "1.in", "1 2\n")
        write(broken / "testdata" / "1.ans", "3\n")

    for name, config, files in (
        ("oddtype", "type: scored\nsubtasks:\n  - n_cases: 1\n", {"chk.cc", "1.in", "1.ans"}),
        ("nochecker", "subtasks:\n  - n_cases: 1\n", {"1.in", "1.ans"}),
        ("noinput", "subtasks:\n  - n_cases: 2\n", {"chk.cc", "1.in", "1.ans", "2.ans"}),
        ("noanswer", "subtasks:\n  - n_cases: 1\n", {"chk.cc", "1.in"}),
    ):
        broken = problems / name
        write(broken / "config.yaml", config)
        write(broken / "statement.txt", f"{name}\n")
        for file in files:
            target = broken / file if file == "chk.cc" else broken / "testdata" / file
            write(target, SUM_CHECKER if file == "chk.cc" else "1\n")
    return root
