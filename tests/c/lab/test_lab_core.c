/* SPDX-License-Identifier: Apache-2.0 */
/* The lab's core: the interleaved rounds are shuffled and warm each method
 * before timing it, every ratio is a speed-up, arguments outside the
 * declared table are refused with a message that names them, working sets
 * are sized from the caches and place every call inside them. */
#include "lab.h"
#include "distribution.h"
#include "working_set.h"

#include "memkit.h"
#include "text.h"   /* mk_text_parse_size: the library's size grammar, the reference */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(cond, ...)                                        \
    do {                                                        \
        if (!(cond)) {                                          \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                       \
            fputc('\n', stderr);                                \
            failures++;                                         \
        }                                                       \
    } while (0)

/* ---- interleave ---- */
enum { NM = 4, ROUNDS = 64 };
typedef struct {
    int log[2 * NM * ROUNDS][2];   /* method, warm */
    size_t n;
} call_log;

static double logging_pass(const lab_method *m, void *arg, int warm)
{
    call_log *l = arg;
    l->log[l->n][0] = m->kind;
    l->log[l->n][1] = warm;
    l->n++;
    return 100.0 + m->kind;   /* the sample: tells which method produced it */
}

static void test_interleave(void)
{
    static const lab_info info = {.name = "test", .seed = "", .description = ""};
    lab_ctx ctx = {.info = &info, .rng = 12345};
    lab_method m[NM] = {{.name = "a", .kind = 0}, {.name = "b", .kind = 1}, {.name = "c", .kind = 2},
                        {.name = "d", .kind = 3}};
    static call_log l;
    double samples[NM * ROUNDS];
    lab_interleave(&ctx, m, NM, ROUNDS, logging_pass, &l, samples);
    CHECK(l.n == 2 * NM * ROUNDS, "%zu passes, expected %d", l.n, 2 * NM * ROUNDS);
    int first[NM] = {0}, same_as_previous = 0;
    for (size_t r = 0; r < ROUNDS; r++) {
        int seen[NM] = {0};
        for (size_t j = 0; j < NM; j++) {
            int *warm = l.log[(r * NM + j) * 2], *timed = l.log[(r * NM + j) * 2 + 1];
            CHECK(warm[1] == 1 && timed[1] == 0 && warm[0] == timed[0],
                  "round %zu slot %zu: not a warm-up then a timed pass of one method", r, j);
            seen[timed[0]]++;
        }
        for (int k = 0; k < NM; k++)
            CHECK(seen[k] == 1, "round %zu timed method %d %d times", r, k, seen[k]);
        first[l.log[r * NM * 2][0]]++;
        if (r && !memcmp(l.log[r * NM * 2], l.log[(r - 1) * NM * 2], sizeof(int[2 * NM][2])))
            same_as_previous++;
    }
    for (int k = 0; k < NM; k++)   /* 64 rounds: each leads ~16 times if shuffled */
        CHECK(first[k] >= 4, "method %d ran first in only %d of %d rounds: not shuffled", k,
              first[k], ROUNDS);
    CHECK(same_as_previous < ROUNDS / 4, "%d rounds repeated the order before them",
          same_as_previous);
    for (int k = 0; k < NM; k++)
        for (int r = 0; r < ROUNDS; r++)
            CHECK(samples[k * ROUNDS + r] == 100.0 + k, "sample of method %d round %d misplaced",
                  k, r);
}

/* ---- speed-ups ---- */
static void test_speedups(void)
{
    double fast_ns[] = {1, 2}, slow_ns[] = {2, 8}, up[2];
    lab_speedups(fast_ns, slow_ns, 2, 0, up);
    CHECK(up[0] == 2 && up[1] == 4, "times: faster must be > 1 (got %g %g)", up[0], up[1]);
    lab_speedups(slow_ns, fast_ns, 2, 0, up);
    CHECK(up[0] == 0.5 && up[1] == 0.25, "times: slower must be < 1 (got %g %g)", up[0], up[1]);
    double fast_gbs[] = {10}, slow_gbs[] = {5};
    lab_speedups(fast_gbs, slow_gbs, 1, 1, up);
    CHECK(up[0] == 2, "throughput: faster must be > 1 (got %g)", up[0]);
    CHECK(lab_judge(1.01, 1.2) == 1 && lab_judge(0.8, 0.99) == -1 && lab_judge(0.9, 1.1) == 0,
          "judge: faster, slower, too noisy");
    double v[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
    CHECK(lab_stat_value(v, 20, "mean_fastest_10pct", 0) == 1.5, "fastest times are the lowest");
    CHECK(lab_stat_value(v, 20, "mean_fastest_10pct", 1) == 19.5, "fastest throughputs are the highest");
}

/* ---- records ---- */
static void test_record(void)
{
    static const lab_info info = {.name = "test", .seed = "", .description = ""};
    char *buf = NULL;
    size_t len = 0;
    lab_ctx ctx = {.info = &info, .nprocesses = 1};
    ctx.jsonl = open_memstream(&buf, &len);
    double mine[] = {1, 1, 1}, base[] = {2, 3, 4};
    lab_record r = {.series = "fast", .params_json = "\"size\":8", .axis = "size", .axis_unit = "B",
                    .metric = "ns_per_call", .unit = "ns", .samples = mine, .n = 3,
                    .baseline = "slow", .baseline_samples = base};
    lab_summary s = lab_record_emit(&ctx, &r);
    fclose(ctx.jsonl);
    CHECK(s.has_ratio && s.ratio == 3 && s.ratio_min == 2 && s.ratio_max == 4,
          "summary speed-up %g (%g..%g), expected 3 (2..4)", s.ratio, s.ratio_min, s.ratio_max);
    CHECK(strstr(buf, "\"ratios\":[2,3,4]") && strstr(buf, "\"better\":\"lower\"") &&
              strstr(buf, "\"samples\":[1,1,1]") &&
              strstr(buf, "\"baseline\":{\"series\":\"slow\",\"params\":{\"size\":8}}") &&
              strstr(buf, "\"axis\":{\"name\":\"size\",\"unit\":\"B\"}"),
          "record lacks its fields: %s", buf);
    lab_summary_free(&s);
    free(buf);
}

/* ---- arguments ---- */
static void test_args(void)
{
    static const lab_arg args[] = {
        {"reps", LAB_INT, "31", "3", "batches", 1, 1000},
        {"max", LAB_SIZE, "1M", NULL, "largest size", 0, 0},
        {"only", LAB_TEXT, NULL, NULL, "filter", 0, 0},
    };
    static const lab_info info = {.name = "sizes", .args = args, .nargs = 3};
    const char *v[LAB_MAX_ARGS];
    char err[512];
    CHECK(lab_parse_args(&info, 0, 0, NULL, v, err, sizeof err) == 0 && !strcmp(v[0], "31") &&
              !strcmp(v[1], "1M") && v[2] == NULL,
          "defaults");
    CHECK(lab_parse_args(&info, 1, 0, NULL, v, err, sizeof err) == 0 && !strcmp(v[0], "3") &&
              !strcmp(v[1], "1M"),
          "quick defaults");
    char *ok[] = {"reps=7", "max=64K", "only=x=y"};
    CHECK(lab_parse_args(&info, 1, 3, ok, v, err, sizeof err) == 0 && !strcmp(v[0], "7") &&
              !strcmp(v[1], "64K") && !strcmp(v[2], "x=y"),
          "given values: %s", err);
    char *unknown[] = {"reps=7", "frobs=2"};
    CHECK(lab_parse_args(&info, 0, 2, unknown, v, err, sizeof err) == -1 &&
              strstr(err, "unknown argument 'frobs=2'") && strstr(err, "reps=N") &&
              strstr(err, "max=SIZE"),
          "unknown key: '%s'", err);
    char *dashed[] = {"--reps", "7"};
    CHECK(lab_parse_args(&info, 0, 2, dashed, v, err, sizeof err) == -1 &&
              strstr(err, "unknown argument '--reps'"),
          "a --key value form is refused: '%s'", err);
    char *bad[] = {"max=lots"};
    CHECK(lab_parse_args(&info, 0, 1, bad, v, err, sizeof err) == -1 && strstr(err, "max"),
          "bad size: '%s'", err);
    char *range[] = {"reps=0"};
    CHECK(lab_parse_args(&info, 0, 1, range, v, err, sizeof err) == -1 &&
              strstr(err, "out of range"),
          "out of range: '%s'", err);
    char *frac[] = {"reps=2.5"};
    CHECK(lab_parse_args(&info, 0, 1, frac, v, err, sizeof err) == -1, "an integer takes no fraction");
}

/* Refused before anything runs: numbers that are no numbers, a key given
 * twice, a text its own check refuses; what is echoed is fit for a terminal. */
static int check_mode(const char *v, char *err, size_t len) { return lab_one_of(v, "fast|slow", err, len); }

static void test_args_refused(void)
{
    static const lab_arg args[] = {
        {"budget", LAB_REAL, "0.5", NULL, "seconds", 0.001, 1e6},
        {"scale", LAB_REAL, "1", NULL, "unbounded", 0, 0},
        {"reps", LAB_INT, "3", NULL, "batches", 1, 100},
        {"mode", LAB_TEXT, "fast", NULL, "fast or slow", 0, 0, check_mode},
    };
    static const lab_info info = {.name = "t", .args = args, .nargs = 4};
    const char *v[LAB_MAX_ARGS];
    char err[512];
    const char *not_finite[] = {"budget=nan", "budget=inf", "scale=nan", "scale=-inf", "scale=NAN"};
    for (size_t i = 0; i < sizeof not_finite / sizeof *not_finite; i++) {
        char *a[] = {(char *)not_finite[i]};
        CHECK(lab_parse_args(&info, 0, 1, a, v, err, sizeof err) == -1 &&
                  strstr(err, "expected a finite number"),
              "%s accepted: '%s'", not_finite[i], err);
    }
    char *twice[] = {"reps=3", "reps=4"};
    CHECK(lab_parse_args(&info, 0, 2, twice, v, err, sizeof err) == -1 &&
              !strcmp(err, "reps given twice (reps=3, then reps=4): give it once"),
          "a key given twice: '%s'", err);
    char *same_twice[] = {"mode=fast", "budget=1", "mode=fast"};
    CHECK(lab_parse_args(&info, 0, 3, same_twice, v, err, sizeof err) == -1 && strstr(err, "twice"),
          "the same value twice is still twice: '%s'", err);
    char *mode[] = {"mode=medium"};
    CHECK(lab_parse_args(&info, 0, 1, mode, v, err, sizeof err) == -1 &&
              !strcmp(err, "mode: 'medium' is not one of fast|slow"),
          "a text's own check: '%s'", err);
    char *fine[] = {"mode=slow", "budget=2"};
    CHECK(lab_parse_args(&info, 0, 2, fine, v, err, sizeof err) == 0 && !strcmp(v[3], "slow"),
          "checked text accepted: '%s'", err);
    char *control[] = {"frob\x1b[2J\n=1"};
    CHECK(lab_parse_args(&info, 0, 1, control, v, err, sizeof err) == -1 &&
              strstr(err, "'frob\\x1b[2J\\x0a=1'") && !strchr(err, '\x1b') && !strchr(err, '\n'),
          "control characters echoed: '%s'", err);
    char buf[8];
    CHECK(!strcmp(lab_printable("a\tbcdefgh", buf, sizeof buf), "a\\x09bc"), "truncated to fit: '%s'", buf);
}

/* ---- distribution files ---- */
static lab_distribution sizes, overlap, align, src_align, repeat;

static int parse(const char *text, char *err, size_t errlen, char *warn, size_t warnlen)
{
    return lab_dist_parse(text, strlen(text), &sizes, &overlap, &align, &src_align, &repeat, err,
                          errlen, warn, warnlen);
}

static void test_distribution_files(void)
{
    char err[256], warn[512];
    CHECK(parse("8:0.5,64:0.5\n0:1\n1:0.25,64:0.75\n", err, sizeof err, warn, sizeof warn) == 0 &&
              !warn[0] && sizes.n == 2 && align.n == 2 && align.cdf[1] == 1,
          "a good file: '%s' '%s'", err, warn);
    CHECK(parse("8:1\r\n0:1\r\n8:1\r\n", err, sizeof err, warn, sizeof warn) == 0, "CRLF: '%s'", err);
    /* the SIGFPE of issue 25: an alignment of 0, on the third line */
    CHECK(parse("8:1\n0:1\n0:0.5,8:0.5\n", err, sizeof err, warn, sizeof warn) == 3 &&
              !strcmp(err, "alignment 0 is not a power of two from 1 to 64"),
          "alignment 0: '%s'", err);
    const char *bad_align[] = {"3:1", "128:1", "0.5:1", "-8:1", "nan:1"};
    for (size_t i = 0; i < sizeof bad_align / sizeof *bad_align; i++) {
        char text[64];
        snprintf(text, sizeof text, "8:1\n0:1\n%s\n", bad_align[i]);
        CHECK(parse(text, err, sizeof err, warn, sizeof warn) == 3, "alignment %s accepted", bad_align[i]);
    }
    CHECK(parse("8:1\n2:1\n8:1\n", err, sizeof err, warn, sizeof warn) == 2 && strstr(err, "overlap 2"),
          "overlap 2: '%s'", err);
    CHECK(parse("-1:1\n0:1\n8:1\n", err, sizeof err, warn, sizeof warn) == 1, "a negative size");
    CHECK(parse("2000000000:1\n0:1\n8:1\n", err, sizeof err, warn, sizeof warn) == 1, "a size over 1 GiB");
    CHECK(parse("8:-0.5,9:1.5\n0:1\n8:1\n", err, sizeof err, warn, sizeof warn) == 1, "a negative probability");
    CHECK(parse("8:1\n0:1\n", err, sizeof err, warn, sizeof warn) == 3 && strstr(err, "three lines"),
          "two lines: '%s'", err);
    CHECK(parse("8:1,x\n0:1\n8:1\n", err, sizeof err, warn, sizeof warn) == 1 && strstr(err, "entry 2"),
          "garbage: '%s'", err);
    /* probabilities summing to 1.2: used, scaled, and said */
    CHECK(parse("8:0.7,16:0.5\n0:1\n8:1\n", err, sizeof err, warn, sizeof warn) == 0 &&
              !strcmp(warn, "line 1 (sizes): the probabilities sum to 1.2, not 1; scaled to 1") &&
              sizes.cdf[0] > 0.58 && sizes.cdf[0] < 0.59,
          "sum 1.2: '%s'", warn);
    CHECK(parse("8:0.999999\n0:1.000001\n8:1\n", err, sizeof err, warn, sizeof warn) == 0 && !warn[0],
          "six-digit rounding warned: '%s'", warn);
    /* the optional fourth line (memkit record's): the sources' alignments apart */
    CHECK(parse("8:1\n0:1\n8:1\n", err, sizeof err, warn, sizeof warn) == 0 && src_align.n == 0,
          "three lines: no source alignments");
    CHECK(parse("8:1\n0:1\n8:1\n16:0.5,64:0.5\n", err, sizeof err, warn, sizeof warn) == 0 &&
              src_align.n == 2 && src_align.value[0] == 16 && align.n == 1,
          "a fourth line: '%s'", err);
    CHECK(parse("8:1\n0:1\n8:1\n \r\n", err, sizeof err, warn, sizeof warn) == 0 && src_align.n == 0,
          "a blank fourth line counts as absent: '%s'", err);
    CHECK(parse("8:1\n0:1\n8:1\n0:1\n", err, sizeof err, warn, sizeof warn) == 4 &&
              !strcmp(err, "alignment 0 is not a power of two from 1 to 64"),
          "source alignment 0: '%s'", err);
    CHECK(parse("8:1\n0:1\n8:1\n8:0.5\n", err, sizeof err, warn, sizeof warn) == 0 &&
              strstr(warn, "line 4 (source alignments)"),
          "fourth line's sum: '%s'", warn);
    /* the optional fifth (memkit record's): repeats of a call site's last size */
    CHECK(parse("8:1\n0:1\n8:1\n", err, sizeof err, warn, sizeof warn) == 0 && repeat.n == 0,
          "three lines: no repeats");
    CHECK(parse("8:1\n0:1\n8:1\n\n0:0.3,1:0.7\n", err, sizeof err, warn, sizeof warn) == 0 &&
              src_align.n == 0 && repeat.n == 2 && repeat.value[1] == 1 && repeat.cdf[0] > 0.29 &&
              repeat.cdf[0] < 0.31,
          "a blank fourth line, then repeats: '%s'", err);
    CHECK(parse("8:1\n0:1\n8:1\n64:1\n0:1\n", err, sizeof err, warn, sizeof warn) == 0 &&
              src_align.n == 1 && repeat.n == 1,
          "source alignments and repeats: '%s'", err);
    CHECK(parse("8:1\n0:1\n8:1\n\n2:1\n", err, sizeof err, warn, sizeof warn) == 5 &&
              strstr(err, "repeat 2 is neither"),
          "repeat 2: '%s'", err);
    uint64_t rng = 1;
    parse("8:0.5,64:0.5\n0:1\n1:0.25,64:0.75\n", err, sizeof err, warn, sizeof warn);
    int ones = 0;
    for (int i = 0; i < 4000; i++) {
        double a = lab_dist_draw(&align, &rng);
        CHECK(a == 1 || a == 64, "drew %g", a);
        ones += a == 1;
    }
    CHECK(ones > 800 && ones < 1200, "1 drawn %d of 4000 times, expected ~1000", ones);
    /* the value at a cumulative probability: 1 up to 0.25, 64 above */
    CHECK(lab_dist_at(&align, 0.0) == 1 && lab_dist_at(&align, 0.25) == 1 &&
              lab_dist_at(&align, 0.2500001) == 64 && lab_dist_at(&align, 0.999999) == 64,
          "lab_dist_at: %g %g %g", lab_dist_at(&align, 0.0), lab_dist_at(&align, 0.25),
          lab_dist_at(&align, 0.2500001));
}

/* ---- working sets ---- */
static void test_working_set_levels(void)
{
    const mk_cpu_info *c = mk_cpu();
    lab_ws ws[LAB_WS_MAX];
    char err[256];
    int n = lab_ws_parse("hot,l1,l2,l3,dram,256K,262143", ws, err, sizeof err);
    CHECK(n == 7, "7 working sets, got %d (%s)", n, err);
    if (n == 7 && c->l1d_bytes && c->l2_bytes && c->l3_bytes) {
        CHECK(!strcmp(ws[0].name, "hot") && ws[0].bytes == 0, "hot is the experiment's own");
        CHECK(ws[1].bytes == c->l1d_bytes / 4 && ws[2].bytes == c->l2_bytes / 4 &&
                  ws[3].bytes == c->l3_bytes / 8 && ws[4].bytes == 2 * c->l3_bytes,
              "levels: %zu %zu %zu %zu for caches %zu %zu %zu", ws[1].bytes, ws[2].bytes,
              ws[3].bytes, ws[4].bytes, c->l1d_bytes, c->l2_bytes, c->l3_bytes);
        CHECK(!strcmp(ws[5].name, "256K") && ws[5].bytes == 262144 &&
                  !strcmp(ws[6].name, "262143") && ws[6].bytes == 262143,
              "sizes named as sizes: %s %s", ws[5].name, ws[6].name);
    }
    static const char *const bad[][2] = {
        {"hot,l4", "unknown working set 'l4'"}, {"l3,l3", "lists l3 twice"},
        {"32", "64 bytes to 1G"},             {"2G", "64 bytes to 1G"},
        {"", "names no working set"},         {"hot,,dram", "unknown working set ''"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK(lab_ws_parse(bad[i][0], ws, err, sizeof err) == -1 && strstr(err, bad[i][1]),
              "ws=%s: '%s', expected '%s'", bad[i][0], err, bad[i][1]);
    }
    CHECK(lab_pages_check("4k", err, sizeof err) == 0 && lab_pages_check("huge", err, sizeof err) == 0
              && lab_pages_check("2M", err, sizeof err) == -1,
          "pages: 4k or huge");
}

static void test_arena_placement(void)
{
    lab_arena a;
    lab_arena_new(&a, 64 << 10, 2, 1000, 0);
    CHECK(!strcmp(a.pages, "4k") && a.stride >= a.span && a.len == 2 * a.stride,
          "a 4k arena of two sides: pages %s, stride %zu, len %zu", a.pages, a.stride, a.len);
    uint64_t rng = 42;
    size_t lines_seen[1024] = {0}, distinct = 0;
    for (int i = 0; i < 20000; i++) {
        size_t n = (size_t)(lab_rand(&rng) % 1000), in = (size_t)(lab_rand(&rng) % 64);
        size_t o = lab_arena_place(&a, 1, 64, in, 0, n, &rng);
        CHECK(o % 64 == in && o >= a.stride && o + n <= a.stride + a.span,
              "call of %zu at %zu (line offset %zu) outside side 1 [%zu, %zu)", n, o, in,
              a.stride, a.stride + a.span);
        size_t line = (o - a.stride) / 64;
        distinct += line < 1024 && !lines_seen[line]++;
    }
    CHECK(distinct > 900, "placements reach only %zu of 1024 lines: not spread", distinct);
    /* an overlapping pair: room below the source for a backward distance */
    for (int i = 0; i < 1000; i++) {
        size_t o = lab_arena_place(&a, 0, 64, 5, 700, 900, &rng);
        CHECK(o % 64 == 5 && o >= 700 && o + 900 <= a.span, "pair at %zu does not fit", o);
    }
    /* pages: the page offset kept, the call inside */
    for (int i = 0; i < 1000; i++) {
        size_t o = lab_arena_place(&a, 0, 4096, 4095, 0, 4096, &rng);
        CHECK(o % 4096 == 4095 && o + 4096 <= a.span, "page-offset call at %zu", o);
    }
    /* larger than the span: clamped to its start, and still mapped */
    lab_arena small;
    lab_arena_new(&small, 256, 1, 1000, 0);
    size_t o = lab_arena_place(&small, 0, 64, 3, 0, 1000, &rng);
    CHECK(o == 3 && o + 1000 <= small.len, "an oversized call at %zu of a %zu-byte mapping", o,
          small.len);
    /* windows: together they touch what the sides hold, 2 at least */
    CHECK(lab_arena_windows(&a, 2, 16 << 10) == 8 && lab_arena_windows(&a, 1, 1 << 20) == 2 &&
              lab_arena_windows(&a, 2, 1) == LAB_WS_MAX_WINDOWS,
          "windows %zu %zu %zu", lab_arena_windows(&a, 2, 16 << 10),
          lab_arena_windows(&a, 1, 1 << 20), lab_arena_windows(&a, 2, 1));
    CHECK(lab_lines_touched(0, 10) == 0 && lab_lines_touched(1, 63) == 64 &&
              lab_lines_touched(2, 63) == 128 && lab_lines_touched(64, 0) == 64,
          "lines touched");
    lab_arena_free(&a);
    lab_arena_free(&small);
}

/* ---- the size grammar: tests/data/sizes.tsv, which the Python tests read too ---- */

/* A field of the table: "quoted" for spaces or the empty text. */
static char *field(char *s)
{
    size_t n = strlen(s);
    if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
        s[n - 1] = '\0';
        return s + 1;
    }
    return s;
}

static void test_size_grammar(void)
{
    FILE *f = fopen(MEMKIT_TEST_DATA "/sizes.tsv", "r");
    CHECK(f, "cannot read %s/sizes.tsv", MEMKIT_TEST_DATA);
    if (!f)
        return;
    char line[256], buf[64];
    size_t cases = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *kind = strtok(line, "\t"), *a = strtok(NULL, "\t"), *b = strtok(NULL, "\t");
        if (!kind || kind[0] == '#')
            continue;
        CHECK(a && b, "sizes.tsv: a case needs three fields");
        if (!a || !b)
            continue;
        a = field(a);
        cases++;
        if (!strcmp(kind, "parse")) {
            size_t lib = 0, lab = 0;
            int lib_ok = mk_text_parse_size(a, strlen(a), &lib) == 0;
            int lab_ok = lab_try_parse_size(a, &lab) == 0;
            if (!strcmp(b, "invalid")) {
                CHECK(!lib_ok && !lab_ok, "'%s' should be refused (library %d, lab %d)", a,
                      lib_ok, lab_ok);
            } else if (!strcmp(b, "never")) {
                CHECK(lib_ok && lib == SIZE_MAX, "'%s': the library should read never", a);
                CHECK(!lab_ok, "'%s': the lab takes no never where a size is asked for", a);
            } else {
                size_t want = (size_t)strtoull(b, NULL, 10);
                CHECK(lib_ok && lib == want, "'%s': the library read %zu, not %s", a, lib, b);
                CHECK(lab_ok && lab == want, "'%s': the lab read %zu, not %s", a, lab, b);
            }
        } else if (!strcmp(kind, "show")) {
            lab_fmt_size((size_t)strtoull(a, NULL, 10), buf, sizeof buf);
            CHECK(!strcmp(buf, b), "%s B shown as '%s', not '%s'", a, buf, b);
        } else {
            CHECK(0, "sizes.tsv: unknown kind '%s'", kind);
        }
    }
    fclose(f);
    CHECK(cases >= 20, "sizes.tsv: only %zu cases read", cases);
}

int main(void)
{
    test_interleave();
    test_speedups();
    test_record();
    test_args();
    test_args_refused();
    test_distribution_files();
    test_working_set_levels();
    test_arena_placement();
    test_size_grammar();
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    else
        printf("lab core: ok\n");
    return failures != 0;
}
