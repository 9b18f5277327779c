/* The lab's core: the interleaved rounds are shuffled and warm each method
 * before timing it, every ratio is a speed-up, arguments outside the
 * declared table are refused with a message that names them. */
#include "lab.h"

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
    lab_method m[NM] = {{"a", NULL, 0, NULL, NULL}, {"b", NULL, 1, NULL, NULL}, {"c", NULL, 2, NULL, NULL},
                        {"d", NULL, 3, NULL, NULL}};
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

int main(void)
{
    test_interleave();
    test_speedups();
    test_record();
    test_args();
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    else
        printf("lab core: ok\n");
    return failures != 0;
}
