/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration every routine reads (mk_cfg), set once at load time:
 * defaults derived from the CPU, then the tuned profile written by
 * `memkit tune` (if any), then MEMKIT_TUNABLES, which overrides both.
 * Runs from the ifunc resolvers, before libc is initialised: raw system
 * calls only, problems reported once on stderr, never fatal.  The defaults
 * sized by the L2 or L3 wait (MK_PENDING) until the first call of
 * MK_PENDING_FLOOR bytes or more, or anything else asks (mk_config). */
#include "internal.h"
#include "text.h"
#include "once.h"

mk_tunables mk_cfg MK_FIRST_CALL_DATA;
size_t mk_memset_large_from = SIZE_MAX;
size_t mk_copy_large_from = SIZE_MAX;
static int cfg_once MK_FIRST_CALL_DATA, complete_once;

/* Problems are reported one line each, up to a few: 120 KB of junk settings
 * once printed a thousand lines into the host program's stderr. */
enum { MAX_REPORTED = 8 };

MK_EARLY static void report_stderr(void *ctx, const char *line)
{
    unsigned *lines = ctx;
    if ((*lines)++ >= MAX_REPORTED)
        return;
    mk_raw_write_stderr(line);
    mk_raw_write_stderr("\n");
}

/* Where the profile lives: $MEMKIT_PROFILE ("" or "none": no profile), else
 * $XDG_CONFIG_HOME/memkit/profile, else $HOME/.config/memkit/profile.
 * Returns 0 when there is none; *named says the path was given explicitly
 * (then a missing file is worth reporting).  A path that does not fit is
 * reported, never cut short: a shorter path may name another file. */
MK_EARLY static int profile_path(const mk_raw_env *env, char *path, size_t cap, int *named)
{
    const char *explicit = mk_raw_env_get(env, "MEMKIT_PROFILE");
    *named = explicit != 0;
    const char *base = explicit, *tail = "";
    if (explicit) {
        if (!explicit[0] || (explicit[0] == 'n' && explicit[1] == 'o' && explicit[2] == 'n' &&
                             explicit[3] == 'e' && explicit[4] == '\0'))
            return 0;
    } else if ((base = mk_raw_env_get(env, "XDG_CONFIG_HOME")) && base[0]) {
        tail = "/memkit/profile";
    } else if ((base = mk_raw_env_get(env, "HOME")) && base[0]) {
        tail = "/.config/memkit/profile";
    } else {
        return 0;
    }
    if (mk_text_len(base) + mk_text_len(tail) >= cap) {
        mk_raw_write_stderr("memkit: the profile's path is too long; using the defaults\n");
        return 0;
    }
    size_t n = mk_text_copy(path, cap, base);
    mk_text_copy(path + n, cap - n, tail);
    return 1;
}

MK_EARLY static int starts_with(const char *s, long n, const char *prefix)
{
    long i = 0;
    for (; prefix[i]; i++)
        if (i >= n || s[i] != prefix[i])
            return 0;
    return 1;
}

/* The decimal number after " key" (key ends in '=') in line[0..n), or -1. */
MK_EARLY static long field_after(const char *line, long n, const char *key)
{
    long klen = (long)mk_text_len(key);
    for (long i = 1; i + klen < n; i++) {
        if (line[i - 1] != ' ' || !starts_with(line + i, n - i, key))
            continue;
        long v = -1;
        for (i += klen; i < n && line[i] >= '0' && line[i] <= '9'; i++)
            v = (v < 0 ? 0 : v * 10) + (line[i] - '0');
        return v;
    }
    return -1;
}

/* "cpu=VENDOR family=F model=M microcode=0x..." names the CPU `memkit tune`
 * measured on.  Thresholds measured on another model say nothing about this
 * one, so the profile counts only on the same vendor, family and model (a
 * microcode update keeps it: `memkit tune --check` is how to see whether it
 * still helps). */
MK_EARLY static int profile_cpu_matches(const char *line, long n, const mk_cpu_info *cpu)
{
    long v = 4;                       /* past "cpu=" */
    long k = 0;
    for (; v < n && line[v] != ' '; v++, k++)
        if (k >= (long)sizeof cpu->vendor - 1 || cpu->vendor[k] != line[v])
            return 0;
    return cpu->vendor[k] == '\0' && field_after(line, n, "family=") == (long)cpu->family &&
           field_after(line, n, "model=") == (long)cpu->model;
}

/* A profile is MEMKIT_TUNABLES settings one per line, '#' comments, and the
 * "cpu=" line above.  Any bad line makes the whole file suspect: it is
 * ignored; so is a profile measured on another CPU.  Lines are cut in place
 * (text[len] must be writable); nothing is written anywhere else: what came
 * of it is report_profile's to say. */
MK_EARLY void mk_profile_read(char *text, long len, const mk_tunables *base,
                               const mk_cpu_info *cpu, mk_profile_reading *r)
{
    r->settings = *base;
    r->line = 0;
    int tied_to_cpu = 0;
    long first_bad = 0;
    for (long i = 0, line = 1; i < len; line++) {
        long j = i;
        while (j < len && text[j] != '\n')
            j++;
        /* A NUL byte would end a setting early without a word. */
        int bad = 0;
        for (long k = i; k < j; k++)
            bad |= text[k] == '\0';
        long a = i, b = j;
        while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r'))
            a++;
        while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r'))
            b--;
        if (a < b && starts_with(text + a, b - a, "cpu=")) {
            tied_to_cpu = 1;
            if (!profile_cpu_matches(text + a, b - a, cpu)) {
                r->outcome = MK_PROFILE_OTHER_CPU;
                r->line = line;
                long w = 0;
                for (long k = a + 4; k < b && w < (long)sizeof r->cpu - 1; k++)
                    r->cpu[w++] = text[k];
                r->cpu[w] = '\0';
                return;
            }
        } else if (a < b && text[a] != '#') {
            text[b] = '\0';
            bad |= mk_tunables_parse(&r->settings, text + a, 0, 0) != 0;
        }
        if (bad && !first_bad)
            first_bad = line;
        i = j + 1;
    }
    if (first_bad) {
        r->outcome = MK_PROFILE_CORRUPT;
        r->line = first_bad;
        return;
    }
    r->outcome = tied_to_cpu ? MK_PROFILE_APPLIES : MK_PROFILE_UNTIED;
}

/* Says what came of the profile at path, once on stderr: nothing when it
 * applies tied to this CPU, or when the default path (not named) has none,
 * the normal case. */
MK_EARLY static void report_profile(const char *path, int named, const mk_profile_reading *r)
{
    if (r->outcome == MK_PROFILE_APPLIES || (r->outcome == MK_PROFILE_MISSING && !named))
        return;
    mk_raw_write_stderr("memkit: profile ");
    mk_raw_write_stderr(path);
    switch (r->outcome) {
    case MK_PROFILE_MISSING:
    case MK_PROFILE_UNREADABLE:
        mk_raw_write_stderr(named ? " (MEMKIT_PROFILE) cannot be read: " : " cannot be read: ");
        mk_raw_write_stderr(r->why);
        mk_raw_write_stderr("; using the defaults\n");
        break;
    case MK_PROFILE_OTHER_CPU:
        mk_raw_write_stderr(" was measured on another CPU model (");
        mk_raw_write_stderr(r->cpu);
        mk_raw_write_stderr("); ignored (run `memkit tune` on this one)\n");
        break;
    case MK_PROFILE_CORRUPT:
        mk_raw_write_stderr(" is corrupt (run `memkit tune` again); ignored\n");
        break;
    case MK_PROFILE_UNTIED:
        mk_raw_write_stderr(" has no cpu= line: applied, but not tied to a CPU model (`memkit "
                            "tune` writes one)\n");
        break;
    case MK_PROFILE_APPLIES:
        break;
    }
}

MK_EARLY static void apply_profile(mk_tunables *cfg, const mk_raw_env *env)
{
    static char path[4096];
    int named;
    if (!profile_path(env, path, sizeof path, &named))
        return;
    static char text[8192];
    mk_profile_reading r;
    long len = mk_raw_read_regular_file(path, text, sizeof text, &r.why);
    if (len < 0)
        r.outcome = len == -2 ? MK_PROFILE_MISSING : MK_PROFILE_UNREADABLE;
    else
        mk_profile_read(text, len, cfg, mk_cpu_early(), &r);
    report_profile(path, named, &r);
    if (r.outcome != MK_PROFILE_APPLIES && r.outcome != MK_PROFILE_UNTIED)
        return;
    *cfg = r.settings;
    /* For display: a path longer than the field ends in "...". */
    size_t n = mk_text_copy(cfg->profile, sizeof cfg->profile, path);
    if (path[n])
        mk_text_copy(cfg->profile + sizeof cfg->profile - 4, 4, "...");
}

MK_EARLY static void apply_settings(mk_tunables *cfg, const char *spec)
{
    unsigned lines = 0;
    mk_tunables_parse(cfg, spec, report_stderr, &lines);
    if (lines > MAX_REPORTED) {
        char line[96], *p = line, *end = line + sizeof line;
        p = mk_text_append(p, end, "memkit: MEMKIT_TUNABLES: ", (size_t)-1);
        p = mk_text_append_uint(p, end, lines - MAX_REPORTED);
        mk_text_append(p, end, " more problems not shown\n", (size_t)-1);
        mk_raw_write_stderr(line);
    }
}

/* A pending threshold counts as the floor below every cache-sized one. */
MK_EARLY static size_t known_or_floor(size_t threshold)
{
    return threshold == MK_PENDING ? MK_PENDING_FLOOR : threshold;
}

MK_EARLY static size_t min_size(size_t a, size_t b)
{
    a = known_or_floor(a), b = known_or_floor(b);
    return a < b ? a : b;
}

/* The one compare each routine's common path makes for large sizes. */
MK_EARLY static void set_large_from(void)
{
    __atomic_store_n(&mk_memset_large_from,
                     min_size(min_size(mk_cfg.rep_stosb_threshold, mk_cfg.nt_threshold),
                              mk_cfg.nt_threshold_zero), __ATOMIC_RELAXED);
    __atomic_store_n(&mk_copy_large_from,
                     min_size(min_size(mk_cfg.rep_movsb_threshold, mk_cfg.nt_copy_threshold),
                              MK_FRESH_CHECK_FROM),
                     __ATOMIC_RELAXED);
}

MK_EARLY static void config_init(void)
{
    mk_tunables_defaults(&mk_cfg, mk_cpu_early(), MK_CACHES_PENDING);
    /* In a setuid/setgid program the environment and the files it names
     * belong to the invoker: ignored, as glibc ignores GLIBC_TUNABLES. */
    mk_raw_env env;
    if (mk_raw_env_open(&env)) {
        apply_profile(&mk_cfg, &env);
        const char *spec = mk_raw_env_get(&env, "MEMKIT_TUNABLES");
        if (spec)
            apply_settings(&mk_cfg, spec);
        mk_raw_env_release(&env);
    }
    set_large_from();
}

MK_EARLY const mk_tunables *mk_config_early(void)
{
    mk_once(&cfg_once, config_init);
    return &mk_cfg;
}

/* What a setting left at a cache-sized default gets, now that the caches
 * are read. */
MK_EARLY static void complete_init(void)
{
    mk_cpu_read_caches();
    mk_tunables full;
    mk_tunables_defaults(&full, mk_cpu_early(), MK_CACHES_KNOWN);
    mk_tunables_fill_pending(&mk_cfg, &full);
    set_large_from();
}

MK_EARLY const mk_tunables *mk_config(void)
{
    mk_config_early();
    mk_once(&complete_once, complete_init);
    return &mk_cfg;
}

void mk_config_install(const mk_tunables *t)
{
    mk_config();
    mk_cfg = *t;
    set_large_from();
}

const mk_tunables *mk_tunables_get(void) { return mk_config(); }
