/* SPDX-License-Identifier: Apache-2.0 */
/* MEMKIT_TUNABLES: the parser on good and bad input (unit level, through
 * mk_tunables_parse, reading the struct's fields: internal.h), the public
 * accessors against those fields for every row, then end to end: this test
 * runs itself with MEMKIT_TUNABLES set and checks what the library did at
 * load time — the one stderr line per problem, the default kept, good
 * values applied, a forced variant honoured, never a crash. */
#include "check.h"
#include "internal.h"
#include "memkit.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- unit level ---- */

typedef struct {
    int lines;
    char last[512];
} reports;

static void collect_report(void *ctx, const char *line)
{
    reports *r = ctx;
    r->lines++;
    snprintf(r->last, sizeof r->last, "%s", line);
}

static mk_tunables base(void)
{
    mk_tunables t = *mk_tunables_get();
    t.rep_stosb_threshold = 111;
    t.nt_threshold = 222;
    t.nt_threshold_zero = 333;
    t.threads = 3;
    t.force_memset[0] = '\0';
    return t;
}

static void good_sizes(void)
{
    static const struct { const char *text; size_t want; } cases[] = {
        {"0", 0}, {"4096", 4096}, {"64K", 65536}, {"64k", 65536}, {"64KiB", 65536},
        {"64KB", 65536}, {"32M", (size_t)32 << 20}, {"1G", (size_t)1 << 30},
        {"never", SIZE_MAX}, {"max", SIZE_MAX}, {"18446744073709551615", SIZE_MAX},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char spec[96];
        snprintf(spec, sizeof spec, "nt_threshold=%s", cases[i].text);
        mk_tunables t = base();
        reports r = {0};
        int problems = mk_tunables_parse(&t, spec, collect_report, &r);
        CHECK(problems == 0 && r.lines == 0, "'%s': %d problems: %s", spec, problems, r.last);
        CHECK(t.nt_threshold == cases[i].want, "'%s' gave %zu, want %zu", spec, t.nt_threshold,
              cases[i].want);
        CHECK(t.rep_stosb_threshold == 111 && t.nt_threshold_zero == 333,
              "'%s' changed another tunable", spec);
    }
}

/* Each bad setting: one report naming it, the value untouched. */
static void bad_values(void)
{
    static const char *bad[] = {
        "nt_threshold=", "nt_threshold=K", "nt_threshold=-1", "nt_threshold=12Q",
        "nt_threshold=1e3", "nt_threshold= 64", "nt_threshold=64 ", "nt_threshold=0x40",
        "nt_threshold=18446744073709551616", "nt_threshold=99999999999999999999999",
        "nt_threshold=17179869184G", "nt_threshold=64KK", "nt_threshold=64KiBB",
        "nt_threshold=never!", "nt_threshold=\xff\xfe", "nt_threshold=1KBB", "nt_threshold=1Ki",
        "nt_threshold=1MiBB", "nt_threshold=1GiBi",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mk_tunables t = base();
        reports r = {0};
        int problems = mk_tunables_parse(&t, bad[i], collect_report, &r);
        CHECK(problems == 1 && r.lines == 1, "'%s': %d problems, %d lines", bad[i], problems,
              r.lines);
        CHECK(strstr(r.last, "nt_threshold") && strstr(r.last, "default kept") &&
                  !strchr(r.last, '\n'),
              "'%s': report does not name the setting: %s", bad[i], r.last);
        CHECK(t.nt_threshold == 222, "'%s' changed the value to %zu", bad[i], t.nt_threshold);
    }
    static const char *bad_counts[] = {"threads=4097", "threads=5K", "threads=x"};
    for (size_t i = 0; i < sizeof bad_counts / sizeof bad_counts[0]; i++) {
        mk_tunables t = base();
        reports r = {0};
        CHECK(mk_tunables_parse(&t, bad_counts[i], collect_report, &r) == 1 && t.threads == 3,
              "'%s' accepted (threads=%u)", bad_counts[i], t.threads);
    }
}

static void names_and_syntax(void)
{
    static const struct { const char *spec; int problems; const char *named; } cases[] = {
        {"bogus=1", 1, "bogus"},
        {"nt_thresholdx=1", 1, "nt_thresholdx"},
        {"NT_THRESHOLD=1", 1, "NT_THRESHOLD"},
        {"nt_threshold", 1, "nt_threshold"},
        {"=5", 1, "''"},
        {"memset=avx9000", 1, "avx9000"},
        {"memset=", 1, "memset"},
        {"memcpy=avx512x", 1, "avx512x"},
        {"::::", 0, NULL},
        {"", 0, NULL},
        {"a:b:c", 3, "'c'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mk_tunables t = base(), before = t;
        reports r = {0};
        int problems = mk_tunables_parse(&t, cases[i].spec, collect_report, &r);
        CHECK(problems == cases[i].problems && r.lines == problems, "'%s': %d problems, want %d",
              cases[i].spec, problems, cases[i].problems);
        CHECK(!cases[i].named || strstr(r.last, cases[i].named), "'%s': report '%s' lacks '%s'",
              cases[i].spec, r.last, cases[i].named);
        CHECK(memcmp(&t, &before, sizeof t) == 0, "'%s' changed the tunables", cases[i].spec);
    }
    /* NULL report and NULL spec are allowed. */
    mk_tunables t = base();
    CHECK(mk_tunables_parse(&t, "bogus=1:nt_threshold=5", NULL, NULL) == 1 && t.nt_threshold == 5,
          "NULL report");
    CHECK(mk_tunables_parse(&t, NULL, NULL, NULL) == 0, "NULL spec");
}

static void good_and_bad_mixed(void)
{
    mk_tunables t = base();
    reports r = {0};
    int problems = mk_tunables_parse(
        &t, "rep_stosb_threshold=2K:bogus=1:nt_threshold=oops:nt_threshold_zero=8M:memset=sse2:threads=7",
        collect_report, &r);
    CHECK(problems == 2 && r.lines == 2, "%d problems", problems);
    CHECK(t.rep_stosb_threshold == 2048 && t.nt_threshold == 222 &&
              t.nt_threshold_zero == ((size_t)8 << 20) && t.threads == 7 &&
              !strcmp(t.force_memset, "sse2"),
          "good settings beside bad ones not applied");
    /* the last setting of a name wins; "auto" clears a forced variant */
    CHECK(mk_tunables_parse(&t, "nt_threshold=1:nt_threshold=2:memset=auto", NULL, NULL) == 0 &&
              t.nt_threshold == 2 && t.force_memset[0] == '\0',
          "repeat / auto");
    /* A very long value is reported (truncated), not overflowing anything. */
    char spec[3000] = "memset=";
    memset(spec + 7, 'z', sizeof spec - 8);
    spec[sizeof spec - 1] = '\0';
    r = (reports){0};
    CHECK(mk_tunables_parse(&t, spec, collect_report, &r) == 1 && strlen(r.last) < 256 &&
              t.force_memset[0] == '\0',
          "long value: %s", r.last);
}

/* Each tunable's bounds (memkit_tunables.def): a value outside them is
 * refused like a bad one, the message naming the bound.  rep_movsb_align is
 * used as a mask (dst - src & (align - 1)): 3 would let rep movsb copy at
 * odd distances. */
static void bounds(void)
{
    static const struct { const char *spec; const char *bound; } refused[] = {
        {"rep_movsb_align=3", "a power of two from 1 to 4K"},
        {"rep_movsb_align=0", "a power of two from 1 to 4K"},
        {"rep_movsb_align=96", "a power of two from 1 to 4K"},
        {"rep_movsb_align=8K", "a power of two from 1 to 4K"},
        {"rep_movsb_align=never", "a power of two from 1 to 4K"},
        {"threads=2000", "0 to 1024"},   /* was taken, then cut to 1024 by the pool */
        {"threads=never", "0 to 1024"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        mk_tunables t = base(), before = t;
        reports r = {0};
        int problems = mk_tunables_parse(&t, refused[i].spec, collect_report, &r);
        CHECK(problems == 1 && r.lines == 1, "'%s': %d problems, %d lines", refused[i].spec,
              problems, r.lines);
        CHECK(strstr(r.last, refused[i].spec) && strstr(r.last, "out of bounds") &&
                  strstr(r.last, refused[i].bound) && strstr(r.last, "default kept"),
              "'%s': want the bound '%s' named: '%s'", refused[i].spec, refused[i].bound, r.last);
        CHECK(memcmp(&t, &before, sizeof t) == 0, "'%s' changed the tunables", refused[i].spec);
    }
    static const struct { const char *spec; size_t align; } accepted[] = {
        {"rep_movsb_align=1", 1}, {"rep_movsb_align=64", 64}, {"rep_movsb_align=4096", 4096},
        {"rep_movsb_align=4K", 4096}, {"rep_movsb_align=2", 2},
    };
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
        mk_tunables t = base();
        reports r = {0};
        CHECK(mk_tunables_parse(&t, accepted[i].spec, collect_report, &r) == 0 && r.lines == 0 &&
                  t.rep_movsb_align == accepted[i].align,
              "'%s': align %zu, report '%s'", accepted[i].spec, t.rep_movsb_align, r.last);
    }
    mk_tunables t = base();
    CHECK(mk_tunables_parse(&t, "threads=0:threads=1024:nt_copy_threshold=0:nt_copy_threshold=never",
                            NULL, NULL) == 0 && t.threads == 1024 && t.nt_copy_threshold == SIZE_MAX,
          "the bounds themselves are in bounds");
}

/* glibc's rule for a name given twice: the last value, said once per name;
 * what a user typed is echoed with its control characters escaped. */
static void repeats_and_escapes(void)
{
    mk_tunables t = base();
    reports r = {0};
    int problems = mk_tunables_parse(&t, "nt_threshold=1K:threads=2:nt_threshold=2K:nt_threshold=4K",
                                     collect_report, &r);
    CHECK(problems == 0 && t.nt_threshold == 4096 && t.threads == 2,
          "repeated name: problems %d, nt_threshold %zu (want the last, 4096)", problems,
          t.nt_threshold);
    CHECK(r.lines == 1 && strstr(r.last, "given twice") && strstr(r.last, "nt_threshold=2K"),
          "repeated name: want one line naming it, got %d: '%s'", r.lines, r.last);

    t = base();
    r = (reports){0};
    problems = mk_tunables_parse(&t, "nt_threshold=1\x01\x1b[2JK", collect_report, &r);
    CHECK(problems == 1 && t.nt_threshold == 222 && strstr(r.last, "1\\x01\\x1b[2JK") &&
              !strchr(r.last, '\x01') && !strchr(r.last, '\x1b'),
          "control characters echoed raw: '%s'", r.last);
}

/* format -> parse gives the same tunables back. */
static void format_round_trip(void)
{
    mk_tunables t = base();
    t.nt_threshold = SIZE_MAX;
    snprintf(t.force_memset, sizeof t.force_memset, "sse2");
    char buf[1024];
    size_t need = mk_tunables_format(&t, buf, sizeof buf);
    CHECK(need == strlen(buf), "format length %zu vs %zu", need, strlen(buf));
    mk_tunables back = *mk_tunables_get();
    CHECK(mk_tunables_parse(&back, buf, NULL, NULL) == 0, "'%s' does not parse", buf);
    CHECK(back.rep_stosb_threshold == 111 && back.nt_threshold == SIZE_MAX &&
              back.nt_threshold_zero == 333 && back.threads == 3 &&
              !strcmp(back.force_memset, "sse2"),
          "round trip of '%s'", buf);
    char small[8];
    CHECK(mk_tunables_format(&t, small, sizeof small) == need && strlen(small) == 7,
          "truncated format");
}

/* ---- the public accessors: what a caller outside the library reads ---- */

/* A size or count row: mk_tunables_number gives the field, and it is no
 * variant. */
static void expect_number(const mk_tunables *t, const char *name, size_t field)
{
    size_t got = 0xdead;
    CHECK(mk_tunables_number(t, name, &got) == 0 && got == field, "%s: %zu, the field %zu", name,
          got, field);
    CHECK(mk_tunables_variant(t, name) == NULL, "%s: a variant", name);
}

/* A variant row: mk_tunables_variant gives the field ("auto" for ""), and it
 * is no number (*out untouched). */
static void expect_variant(const mk_tunables *t, const char *name, const char *field)
{
    const char *got = mk_tunables_variant(t, name);
    CHECK(got && !strcmp(got, field[0] ? field : "auto"), "%s: '%s', the field '%s'", name,
          got ? got : "(null)", field);
    size_t out = 77;
    CHECK(mk_tunables_number(t, name, &out) == -1 && out == 77, "%s: a number", name);
}

/* Every row of memkit_tunables.def, its field named by the row itself (not
 * through the library's table of offsets). */
static void expect_every_row(const mk_tunables *t)
{
    size_t rows = 0;
#define EXPECT_SIZE(name) expect_number(t, #name, t->name)
#define EXPECT_COUNT(name) expect_number(t, #name, t->name)
#define EXPECT_VARIANT(name) expect_variant(t, #name, t->force_##name)
#define MK_TUNABLE(name, kind, bounds, def, help) EXPECT_##kind(name), rows++;
#include "memkit_tunables.def"
#undef MK_TUNABLE
#undef EXPECT_SIZE
#undef EXPECT_COUNT
#undef EXPECT_VARIANT
    CHECK(rows == MK_TUNABLE_COUNT, "%zu rows, the table has %d", rows, MK_TUNABLE_COUNT);
    CHECK(mk_tunables_profile(t) == t->profile, "profile: not the field");
}

static void accessors(void)
{
    expect_every_row(mk_tunables_get());

    /* A distinct value in every field, so a row read for another shows. */
    mk_tunables *c = mk_tunables_copy(mk_tunables_get());
    CHECK(c != NULL && c != mk_tunables_get(), "copy: %p", (void *)c);
    if (!c)
        return;
    size_t i = 1;
#define SET_SIZE(name) c->name = 1000 + i++
#define SET_COUNT(name) c->name = (unsigned)(1000 + i++)
#define SET_VARIANT(name) snprintf(c->force_##name, sizeof c->force_##name, "v%zu", i++)
#define MK_TUNABLE(name, kind, bounds, def, help) SET_##kind(name);
#include "memkit_tunables.def"
#undef MK_TUNABLE
#undef SET_SIZE
#undef SET_COUNT
#undef SET_VARIANT
    snprintf(c->profile, sizeof c->profile, "/some/profile");
    expect_every_row(c);
    CHECK(!strcmp(mk_tunables_profile(c), "/some/profile"), "profile '%s'", mk_tunables_profile(c));
    mk_tunables_free(c);

    /* Names: exactly a row's, in its kind. */
    static const char *unknown[] = {"bogus", "", "NT_THRESHOLD", "nt_thresh", "nt_threshold ",
                                    "nt_threshold=1", "force_memset", "profile"};
    for (size_t k = 0; k < sizeof unknown / sizeof unknown[0]; k++) {
        size_t out = 5;
        CHECK(mk_tunables_number(mk_tunables_get(), unknown[k], &out) == -1 && out == 5,
              "'%s' read as a number", unknown[k]);
        CHECK(mk_tunables_variant(mk_tunables_get(), unknown[k]) == NULL, "'%s' read as a variant",
              unknown[k]);
    }
    size_t out = 5;
    CHECK(mk_tunables_number(mk_tunables_get(), NULL, &out) == -1 && out == 5 &&
              mk_tunables_variant(mk_tunables_get(), NULL) == NULL,
          "a NULL name read");
    CHECK(mk_tunables_copy(NULL) == NULL, "a copy of NULL");
    mk_tunables_free(NULL);
}

/* Settings tried on a copy (copy, parse, format, parse back) leave the
 * tunables in force as they were. */
static void copies_leave_the_library_alone(void)
{
    char in_force[1024], before[1024], after[1024], again[1024];
    mk_tunables_format(mk_tunables_get(), in_force, sizeof in_force);
    size_t threshold_in_force = 0;
    mk_tunables_number(mk_tunables_get(), "nt_threshold", &threshold_in_force);

    mk_tunables *c = mk_tunables_copy(mk_tunables_get());
    CHECK(c != NULL, "copy failed");
    if (!c)
        return;
    mk_tunables_format(c, before, sizeof before);
    CHECK(!strcmp(before, in_force), "the copy formats as '%s', the original as '%s'", before,
          in_force);
    CHECK(!strcmp(mk_tunables_profile(c), mk_tunables_profile(mk_tunables_get())),
          "the copy's profile '%s'", mk_tunables_profile(c));

    size_t threshold = threshold_in_force == 12345 ? 54321 : 12345;
    char spec[128];
    snprintf(spec, sizeof spec, "nt_threshold=%zu:memset=sse2:threads=5", threshold);
    CHECK(mk_tunables_parse(c, spec, NULL, NULL) == 0, "'%s' refused", spec);
    size_t v = 0, n = 0;
    CHECK(mk_tunables_number(c, "nt_threshold", &v) == 0 && v == threshold &&
              mk_tunables_number(c, "threads", &n) == 0 && n == 5 &&
              !strcmp(mk_tunables_variant(c, "memset"), "sse2"),
          "the copy after '%s': nt_threshold %zu, threads %zu, memset %s", spec, v, n,
          mk_tunables_variant(c, "memset"));

    /* format -> parse into another copy -> format: the same text */
    mk_tunables_format(c, after, sizeof after);
    CHECK(strcmp(after, before) != 0 && strstr(after, "memset=sse2"), "the copy's text '%s'", after);
    mk_tunables *back = mk_tunables_copy(mk_tunables_get());
    CHECK(back && mk_tunables_parse(back, after, NULL, NULL) == 0, "'%s' does not parse back", after);
    if (back) {
        mk_tunables_format(back, again, sizeof again);
        CHECK(!strcmp(again, after), "round trip: '%s' came back as '%s'", after, again);
    }

    mk_tunables_free(back);
    mk_tunables_free(c);
    char now[1024];
    mk_tunables_format(mk_tunables_get(), now, sizeof now);
    v = 0;
    CHECK(!strcmp(now, in_force) &&
              mk_tunables_number(mk_tunables_get(), "nt_threshold", &v) == 0 &&
              v == threshold_in_force,
          "the tunables in force changed: '%s', were '%s'", now, in_force);
}

/* ---- end to end: the library reading MEMKIT_TUNABLES at load time ---- */

typedef struct {
    int status;
    char out[4096], err[4096];
} child_result;

static void read_all(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    ssize_t got;
    while (len < cap - 1 && (got = read(fd, buf + len, cap - 1 - len)) > 0)
        len += (size_t)got;
    buf[len] = '\0';
}

/* Runs this test as "--report" with MEMKIT_TUNABLES=spec and
 * MEMKIT_PROFILE=profile (each unset if NULL). */
static child_result run_child_with(const char *spec, const char *profile)
{
    child_result r = {0};
    char path_out[] = "/tmp/memkit-tunables-outXXXXXX", path_err[] = "/tmp/memkit-tunables-errXXXXXX";
    int fo = mkstemp(path_out), fe = mkstemp(path_err);
    if (fo < 0 || fe < 0) {
        perror("mkstemp");
        exit(2);
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fo, 1);
        dup2(fe, 2);
        if (spec)
            setenv("MEMKIT_TUNABLES", spec, 1);
        else
            unsetenv("MEMKIT_TUNABLES");
        if (profile)
            setenv("MEMKIT_PROFILE", profile, 1);
        else
            unsetenv("MEMKIT_PROFILE");
        execl("/proc/self/exe", "test_tunables", "--report", (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &r.status, 0);
    lseek(fo, 0, SEEK_SET);
    lseek(fe, 0, SEEK_SET);
    read_all(fo, r.out, sizeof r.out);
    read_all(fe, r.err, sizeof r.err);
    close(fo);
    close(fe);
    unlink(path_out);
    unlink(path_err);
    return r;
}

static child_result run_child(const char *spec) { return run_child_with(spec, NULL); }

/* The child: fills through the dispatched routines, then prints the
 * tunables and the memset variant in force. */
static int report_main(void)
{
    unsigned char buf[5000];
    for (size_t n = 0; n < sizeof buf; n += 97) {
        mk_memset(buf, 0x5c, n);
        for (size_t i = 0; i < n; i++)
            if (buf[i] != 0x5c)
                return 3;
    }
    char tun[1024];
    mk_tunables_format(mk_tunables_get(), tun, sizeof tun);
    printf("tunables %s\nmemset %s\nforced memset %s\n", tun, mk_selected_variant(MK_OP_MEMSET),
           mk_tunables_variant(mk_tunables_get(), "memset"));
    return 0;
}

/* "name=value" as the child's formatted tunables show it. */
static int child_has(const child_result *r, const char *setting)
{
    return tunables_line_has(r->out, setting);
}

static int exited_ok(const child_result *r)
{
    return WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0;
}

static void end_to_end(void)
{
    child_result plain = run_child(NULL);
    CHECK(exited_ok(&plain) && plain.err[0] == '\0', "plain run: status 0x%x, stderr '%s'",
          plain.status, plain.err);
    const char *def_tun = strstr(plain.out, "tunables ");
    CHECK(def_tun != NULL, "no tunables line in '%s'", plain.out);

    child_result good = run_child("nt_threshold=12M:rep_stosb_threshold=3000");
    CHECK(exited_ok(&good) && good.err[0] == '\0', "good: status 0x%x, stderr '%s'", good.status,
          good.err);
    CHECK(child_has(&good, "nt_threshold=12582912") && child_has(&good, "rep_stosb_threshold=3000"),
          "good values not applied: %s", good.out);

    CHECK(strstr(plain.out, "\nforced memset auto\n"), "plain run forces a variant: '%s'",
          plain.out);
    child_result forced = run_child("memset=sse2");
    CHECK(exited_ok(&forced) && forced.err[0] == '\0' && strstr(forced.out, "\nmemset sse2\n") &&
              strstr(forced.out, "\nforced memset sse2\n"),
          "memset=sse2 not honoured: status 0x%x, out '%s', err '%s'", forced.status, forced.out,
          forced.err);

    static const struct { const char *spec; const char *named; } bad[] = {
        {"bogus=1", "bogus"},
        {"nt_threshold=12Q", "nt_threshold"},
        {"memset=avx9000", "avx9000"},
        {"rep_stosb_threshold", "rep_stosb_threshold"},
        {"threads=99999", "threads"},
        {"rep_movsb_align=3", "power of two"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        child_result r = run_child(bad[i].spec);
        CHECK(exited_ok(&r), "'%s': status 0x%x", bad[i].spec, r.status);
        CHECK(count_lines(r.err) == 1 && strstr(r.err, bad[i].named) &&
                  strstr(r.err, "memkit: MEMKIT_TUNABLES"),
              "'%s': want one stderr line naming '%s', got '%s'", bad[i].spec, bad[i].named, r.err);
        CHECK(def_tun && strstr(r.out, def_tun), "'%s': defaults not kept: '%s'", bad[i].spec,
              r.out);
    }

    /* Mixed: the bad one reported, the good one applied. */
    child_result mixed = run_child("bogus=1:nt_threshold_zero=5M");
    CHECK(exited_ok(&mixed) && count_lines(mixed.err) == 1 &&
              child_has(&mixed, "nt_threshold_zero=5242880"),
          "mixed: status 0x%x out '%s' err '%s'", mixed.status, mixed.out, mixed.err);

    /* Garbage never crashes the host program. */
    static const char *garbage[] = {
        "=", ":=:", "=====", "\x01\x02\x03", "memset=sse2=avx2", "nt_threshold=1:::::x",
        "nt_threshold=99999999999999999999999999999999999999", "memset=\xff\xff",
    };
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        child_result r = run_child(garbage[i]);
        CHECK(exited_ok(&r), "garbage %zu: status 0x%x", i, r.status);
        CHECK(strstr(r.out, "memset ") != NULL, "garbage %zu: child did not finish", i);
    }
    char huge[3500];
    memset(huge, 'q', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    child_result r = run_child(huge);
    CHECK(exited_ok(&r) && count_lines(r.err) == 1, "huge spec: status 0x%x, %d lines", r.status,
          count_lines(r.err));
}

/* ---- the profile's CPU line: a profile counts only on the model it was measured on ---- */

static child_result run_with_profile(const char *text)
{
    char path[] = "/tmp/memkit-tunables-profileXXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
        perror("profile");
        exit(2);
    }
    close(fd);
    child_result r = run_child_with(NULL, path);
    unlink(path);
    return r;
}

static void profile_cpu(void)
{
    const mk_cpu_info *cpu = mk_cpu();
    char text[768];
    /* measured here (any microcode): applied, silently */
    snprintf(text, sizeof text, "# tuned\ncpu=%s family=%u model=%u microcode=0x1\nnt_threshold=777K\n",
             cpu->vendor, cpu->family, cpu->model);
    child_result same = run_with_profile(text);
    CHECK(exited_ok(&same) && same.err[0] == '\0' && child_has(&same, "nt_threshold=795648"),
          "profile from this CPU: status 0x%x out '%s' err '%s'", same.status, same.out, same.err);

    /* another model, another family, another vendor: one line, the defaults kept */
    const char *def = strstr(run_child(NULL).out, "tunables ");
    char other[3][160];
    snprintf(other[0], sizeof other[0], "cpu=%s family=%u model=%u", cpu->vendor, cpu->family,
             cpu->model + 1);
    snprintf(other[1], sizeof other[1], "cpu=%s family=%u model=%u", cpu->vendor, cpu->family + 1,
             cpu->model);
    snprintf(other[2], sizeof other[2], "cpu=%sX family=%u model=%u", cpu->vendor, cpu->family,
             cpu->model);
    /* no cpu= line: applied, with one line saying it is tied to no CPU */
    child_result untied = run_with_profile("nt_threshold=777K\n");
    CHECK(exited_ok(&untied) && count_lines(untied.err) == 1 && strstr(untied.err, "no cpu= line") &&
              child_has(&untied, "nt_threshold=795648"),
          "profile without cpu=: status 0x%x out '%s' err '%s'", untied.status, untied.out,
          untied.err);

    for (int i = 0; i < 3; i++) {
        snprintf(text, sizeof text, "%s microcode=0x1\nnt_threshold=777K\n", other[i]);
        child_result r = run_with_profile(text);
        CHECK(exited_ok(&r) && count_lines(r.err) == 1 && strstr(r.err, "another CPU model") &&
                  strstr(r.err, other[i] + 4),
              "'%s': want one line naming it, got '%s'", other[i], r.err);
        CHECK(def && strstr(r.out, def) && !child_has(&r, "nt_threshold=795648"),
              "'%s': profile applied anyway: '%s'", other[i], r.out);
    }
}

/* The profile's reader alone, on text: what it comes to and the line that
 * decided a refusal (the messages are config.c's reporter's, checked above). */
static mk_profile_reading read_text(const char *text)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    mk_tunables b = base();
    mk_profile_reading r;
    mk_cpu_info here = *mk_cpu();
    snprintf(here.vendor, sizeof here.vendor, "Tested");
    here.family = 25, here.model = 1;
    mk_profile_read(buf, (long)strlen(buf), &b, &here, &r);
    return r;
}

static void profile_reader(void)
{
    mk_profile_reading r = read_text("# tuned\ncpu=Tested family=25 model=1\n  nt_threshold=4K \n");
    CHECK(r.outcome == MK_PROFILE_APPLIES && r.line == 0 && r.settings.nt_threshold == 4096 &&
              r.settings.rep_stosb_threshold == 111,
          "a profile of this CPU: outcome %d line %ld nt %zu", r.outcome, r.line, r.settings.nt_threshold);
    r = read_text("nt_threshold=4K\n");
    CHECK(r.outcome == MK_PROFILE_UNTIED && r.settings.nt_threshold == 4096, "untied: outcome %d",
          r.outcome);
    r = read_text("nt_threshold=4K\n\nbogus=1\ncpu=Other family=25 model=1 microcode=0x2\n");
    CHECK(r.outcome == MK_PROFILE_OTHER_CPU && r.line == 4 &&
              !strcmp(r.cpu, "Other family=25 model=1 microcode=0x2"),
          "another CPU wins over a bad line before it: outcome %d line %ld cpu '%s'", r.outcome,
          r.line, r.cpu);
    r = read_text("cpu=Tested family=25 model=1\nnt_threshold=4K\n# fine\nnt_threshold=lots\nbogus\n");
    CHECK(r.outcome == MK_PROFILE_CORRUPT && r.line == 4, "corrupt: outcome %d line %ld", r.outcome,
          r.line);
    static const char nul[] = "nt_threshold=4K\nrep_stosb_threshold=2K\0junk\n";
    static char buf[sizeof nul];
    memcpy(buf, nul, sizeof nul);
    mk_tunables b = base();
    mk_profile_read(buf, (long)sizeof nul - 1, &b, mk_cpu(), &r);
    CHECK(r.outcome == MK_PROFILE_CORRUPT && r.line == 2, "a NUL byte: outcome %d line %ld", r.outcome,
          r.line);
}

/* memkit tune's experiment takes turns between configurations with
 * mk_config_install: what the routines then decide (their one compare for
 * large sizes, the path) follows the configuration put in force, and the
 * original comes back whole. */
static void install_puts_a_configuration_in_force(void)
{
    mk_tunables original = *mk_config();
    mk_tunables *nt = mk_tunables_copy(&original), *loop = mk_tunables_copy(&original);
    CHECK(nt && loop, "copy failed");
    if (!nt || !loop)
        return;
    mk_tunables_parse(nt, "nt_threshold=8K:nt_threshold_zero=8K:rep_stosb_threshold=never:"
                          "nt_copy_threshold=8K:rep_movsb_threshold=never", NULL, NULL);
    mk_tunables_parse(loop, "nt_threshold=never:nt_threshold_zero=never:rep_stosb_threshold=never:"
                            "nt_copy_threshold=never:rep_movsb_threshold=never", NULL, NULL);
    static char dst[64 << 10], src[64 << 10];
    for (int round = 0; round < 2; round++) {
        mk_config_install(nt);
        CHECK(mk_memset_large_from == 8192 && mk_copy_large_from <= 8192,
              "nt in force: large from %zu (memset), %zu (memcpy)", mk_memset_large_from,
              mk_copy_large_from);
        CHECK(mk_set_path(mk_config(), 16384, 0x5c) == MK_PATH_STREAM &&
                  mk_copy_path(mk_config(), dst, src, 16384) == MK_PATH_STREAM,
              "nt in force: 16 KiB not streamed");
        memset(src, 0x3a, sizeof src);
        mk_memcpy(dst, src, sizeof dst);
        CHECK(!memcmp(dst, src, sizeof dst), "the streamed copy differs");
        mk_config_install(loop);
        CHECK(mk_memset_large_from == SIZE_MAX && mk_set_path(mk_config(), 16384, 0x5c) == MK_PATH_LOOP,
              "loop in force: memset large from %zu, 16 KiB not the loop", mk_memset_large_from);
        CHECK(mk_copy_path(mk_config(), dst, src, 16384) == MK_PATH_LOOP,
              "loop in force: 16 KiB memcpy not the loop");
        mk_memset(dst, 7, sizeof dst);
        CHECK(dst[0] == 7 && dst[sizeof dst - 1] == 7, "the loop's memset did not fill");
    }
    mk_config_install(&original);
    CHECK(!memcmp(mk_config(), &original, sizeof original), "the original did not come back whole");
    mk_tunables_free(nt);
    mk_tunables_free(loop);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--report"))
        return report_main();
    good_sizes();
    bad_values();
    names_and_syntax();
    good_and_bad_mixed();
    repeats_and_escapes();
    bounds();
    format_round_trip();
    accessors();
    copies_leave_the_library_alone();
    install_puts_a_configuration_in_force();
    end_to_end();
    profile_cpu();
    profile_reader();
    check_finish();
}
