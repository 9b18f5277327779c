/* SPDX-License-Identifier: Apache-2.0 */
/* Strings without the C library, for the code that runs from the ifunc
 * resolvers and at load time, before libc (and any sanitizer runtime) is
 * initialised: the one copy of each helper the library's early code needs. */
#ifndef MEMKIT_TEXT_H
#define MEMKIT_TEXT_H

#include "internal.h"

#define MK_TEXT_EARLY MK_EARLY static inline

MK_TEXT_EARLY size_t mk_text_len(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

/* s[0..n) equals the NUL-terminated t. */
MK_TEXT_EARLY int mk_text_eq_n(const char *s, size_t n, const char *t)
{
    size_t i = 0;
    for (; i < n; i++)
        if (t[i] != s[i])
            return 0;
    return t[i] == '\0';
}

MK_TEXT_EARLY int mk_text_eq(const char *a, const char *b)
{
    return mk_text_eq_n(a, mk_text_len(a), b);
}

/* At most n bytes of s (fewer at its NUL) to p, within [p, end), always
 * NUL-terminated (end > p); returns where the NUL is. */
MK_TEXT_EARLY char *mk_text_append(char *p, char *end, const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i] && p < end - 1; i++)
        *p++ = s[i];
    *p = '\0';
    return p;
}

/* The same, each byte outside printable ASCII as \xNN: what a user typed,
 * echoed into a message, cannot move the cursor or ring the terminal. */
MK_TEXT_EARLY char *mk_text_append_escaped(char *p, char *end, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n && s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f) {
            if (end - p < 2)
                break;
            *p++ = (char)c;
        } else {
            if (end - p < 5)
                break;
            *p++ = '\\', *p++ = 'x', *p++ = hex[c >> 4], *p++ = hex[c & 15];
        }
    }
    *p = '\0';
    return p;
}

/* v in decimal, as mk_text_append. */
MK_TEXT_EARLY char *mk_text_append_uint(char *p, char *end, size_t v)
{
    char digits[24];
    size_t n = 0;
    do digits[n++] = (char)('0' + v % 10); while ((v /= 10) != 0);
    while (n > 0 && p < end - 1)
        *p++ = digits[--n];
    *p = '\0';
    return p;
}

/* A size as the tunables take it, in the largest unit that keeps it exact:
 * "never" (SIZE_MAX), "64M", "32K", "2112". */
MK_TEXT_EARLY char *mk_text_append_size(char *p, char *end, size_t v)
{
    if (v == SIZE_MAX)
        return mk_text_append(p, end, "never", 5);
    unsigned unit = 0;
    while (unit < 3 && v && (v & 1023) == 0)
        v >>= 10, unit++;
    p = mk_text_append_uint(p, end, v);
    return unit ? mk_text_append(p, end, &"KMG"[unit - 1], 1) : p;
}

/* s[0..n) as a size: "4096", "64K", "64KB", "64KiB", "64M", "1G", "never"
 * (SIZE_MAX), the one grammar of the tunables and the lab's arguments.
 * Returns 0 on success. */
MK_TEXT_EARLY int mk_text_parse_size(const char *s, size_t n, size_t *out)
{
    if (mk_text_eq_n(s, n, "never") || mk_text_eq_n(s, n, "max")) {
        *out = SIZE_MAX;
        return 0;
    }
    if (n == 0)
        return -1;
    size_t v = 0, i = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        size_t d = (size_t)(s[i] - '0');
        if (v > (SIZE_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (i == 0)
        return -1;
    unsigned shift = 0;
    if (i < n) {
        char u = s[i];
        shift = (u == 'k' || u == 'K') ? 10 : (u == 'm' || u == 'M') ? 20
              : (u == 'g' || u == 'G') ? 30 : 99;
        if (shift == 99)
            return -1;
        i++;
        if (i + 1 < n && s[i] == 'i' && s[i + 1] == 'B')   /* "64KiB" */
            i += 2;
        else if (i < n && s[i] == 'B')                      /* "64KB" */
            i++;
    }
    if (i != n || (shift && v > (SIZE_MAX >> shift)))
        return -1;
    *out = v << shift;
    return 0;
}

/* s into dst of cap bytes (cap > 0), cut to fit; returns the length copied. */
MK_TEXT_EARLY size_t mk_text_copy(char *dst, size_t cap, const char *s)
{
    return (size_t)(mk_text_append(dst, dst + cap, s, (size_t)-1) - dst);
}

#endif
