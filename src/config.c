/* The configuration every routine reads (mk_cfg), set once at load time:
 * defaults derived from the CPU, then the tuned profile written by
 * `memkit tune` (if any), then MEMKIT_TUNABLES, which overrides both.
 * Runs from the ifunc resolvers, before libc is initialised: raw system
 * calls only, problems reported once on stderr, never fatal. */
#include "internal.h"
#include "once.h"

mk_tunables mk_cfg;
size_t mk_memset_large_from = SIZE_MAX;
size_t mk_copy_large_from = SIZE_MAX;
static int cfg_once;

MK_EARLY static void report_stderr(void *ctx, const char *line)
{
    (void)ctx;
    mk_raw_write_stderr(line);
    mk_raw_write_stderr("\n");
}

MK_EARLY static size_t str_copy(char *dst, size_t cap, const char *src)
{
    size_t n = 0;
    while (src[n] && n + 1 < cap) {
        dst[n] = src[n];
        n++;
    }
    dst[n] = '\0';
    return n;
}

/* Where the profile lives: $MEMKIT_PROFILE ("" or "none": no profile), else
 * $XDG_CONFIG_HOME/memkit/profile, else $HOME/.config/memkit/profile.
 * Returns 1 if the path was named explicitly (then a missing file is worth
 * reporting). */
MK_EARLY static int profile_path(char *path, size_t cap, int *named)
{
    char base[200];
    *named = 0;
    if (mk_raw_getenv("MEMKIT_PROFILE", path, cap)) {
        *named = 1;
        return path[0] != '\0' && !(path[0] == 'n' && path[1] == 'o' && path[2] == 'n' &&
                                    path[3] == 'e' && path[4] == '\0');
    }
    size_t n;
    if (mk_raw_getenv("XDG_CONFIG_HOME", base, sizeof base) && base[0]) {
        n = str_copy(path, cap, base);
    } else if (mk_raw_getenv("HOME", base, sizeof base) && base[0]) {
        n = str_copy(path, cap, base);
        n += str_copy(path + n, cap - n, "/.config");
    } else {
        return 0;
    }
    str_copy(path + n, cap - n, "/memkit/profile");
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
    long klen = 0;
    while (key[klen])
        klen++;
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
MK_EARLY static int profile_cpu_matches(const char *line, long n)
{
    const mk_cpu_info *cpu = mk_cpu_early();
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
 * reported once and ignored; so is a profile measured on another CPU. */
MK_EARLY static void apply_profile(mk_tunables *cfg)
{
    char path[256];
    int named;
    if (!profile_path(path, sizeof path, &named))
        return;
    static char text[8192];
    long len = mk_raw_read_file(path, text, sizeof text);
    if (len < 0) {
        if (named) {
            mk_raw_write_stderr("memkit: profile ");
            mk_raw_write_stderr(path);
            mk_raw_write_stderr(" (MEMKIT_PROFILE) cannot be read; using the defaults\n");
        }
        return;
    }
    /* Turn the lines into one "a=b:c=d" spec, dropping comments and blanks. */
    static char spec[8192];
    size_t s = 0;
    for (long i = 0; i < len;) {
        long j = i;
        while (j < len && text[j] != '\n')
            j++;
        long a = i, b = j;
        while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r'))
            a++;
        while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r'))
            b--;
        if (a < b && starts_with(text + a, b - a, "cpu=")) {
            if (!profile_cpu_matches(text + a, b - a)) {
                mk_raw_write_stderr("memkit: profile ");
                mk_raw_write_stderr(path);
                char what[96];
                long w = 0;
                for (long k = a + 4; k < b && w < (long)sizeof what - 1; k++)
                    what[w++] = text[k];
                what[w] = '\0';
                mk_raw_write_stderr(" was measured on another CPU model (");
                mk_raw_write_stderr(what);
                mk_raw_write_stderr("); ignored (run `memkit tune` on this one)\n");
                return;
            }
        } else if (a < b && text[a] != '#' && s + (size_t)(b - a) + 2 < sizeof spec) {
            if (s)
                spec[s++] = ':';
            for (long k = a; k < b; k++)
                spec[s++] = text[k];
        }
        i = j + 1;
    }
    spec[s] = '\0';
    mk_tunables trial = *cfg;
    int problems = mk_tunables_parse(&trial, spec, 0, 0);
    if (problems || len >= (long)sizeof text - 1) {
        mk_raw_write_stderr("memkit: profile ");
        mk_raw_write_stderr(path);
        mk_raw_write_stderr(" is corrupt (run `memkit tune` again); ignored\n");
        return;
    }
    *cfg = trial;
    str_copy(cfg->profile, sizeof cfg->profile, path);
}

MK_EARLY static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

MK_EARLY static void config_init(void)
{
    mk_tunables_defaults(&mk_cfg, mk_cpu_early());
    apply_profile(&mk_cfg);
    static char spec[4096];
    if (mk_raw_getenv("MEMKIT_TUNABLES", spec, sizeof spec))
        mk_tunables_parse(&mk_cfg, spec, report_stderr, 0);
    /* The one compare each routine's common path makes for large sizes. */
    mk_memset_large_from = min_size(min_size(mk_cfg.rep_stosb_threshold, mk_cfg.nt_threshold),
                                    mk_cfg.nt_threshold_zero);
    mk_copy_large_from = min_size(mk_cfg.rep_movsb_threshold, mk_cfg.nt_copy_threshold);
}

MK_EARLY const mk_tunables *mk_config(void)
{
    mk_once(&cfg_once, config_init);
    return &mk_cfg;
}

const mk_tunables *mk_tunables_get(void) { return mk_config(); }
