/* memkit-tunables: the library's tunables and its per-CPU strategy table,
 * printed from the library's own tables (memkit_tunables.def,
 * src/strategy.c) as one JSON object, for `memkit env --tunables` and
 * `memkit env --strategies`; README.md's and docs/strategy.md's tables are
 * their Markdown, which tests/python/test_docs.py compares with this.
 *
 *   {"strategy": the row in force,
 *    "tunables": [{name, kind, per_cpu, default (on this CPU), in_force,
 *                  bounds, help}, ...],
 *    "strategies": [{name, matched, defaults: {tunable: "L3/2", ...}}, ...]} */
#include "internal.h"
#include "text.h"

#include <stdio.h>

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

int main(void)
{
    static const char *const kinds[] = {
        [MK_KIND_SIZE] = "size", [MK_KIND_COUNT] = "count", [MK_KIND_VARIANT] = "variant"};
    /* The defaults with the caches read, and what the environment and the
     * profile made of them. */
    const mk_tunables *in_force = mk_tunables_get();
    mk_tunables defaults;
    mk_tunables_defaults(&defaults, mk_cpu(), MK_CACHES_KNOWN);
    char text[256];

    printf("{\"strategy\":");
    json_string(mk_strategy()->name);
    printf(",\"tunables\":[");
    for (size_t i = 0; i < MK_TUNABLE_COUNT; i++) {
        const mk_tunable_row *r = &mk_tunable_rows[i];
        printf("%s{\"name\":", i ? "," : "");
        json_string(r->name);
        printf(",\"kind\":\"%s\",\"per_cpu\":%s,\"default\":", kinds[r->kind],
               r->per_cpu ? "true" : "false");
        mk_tunable_value_text(r, &defaults, text, text + sizeof text);
        json_string(text);
        printf(",\"in_force\":");
        mk_tunable_value_text(r, in_force, text, text + sizeof text);
        json_string(text);
        printf(",\"bounds\":");
        mk_tunable_bounds_text(r, text, text + sizeof text);
        json_string(text);
        printf(",\"help\":");
        json_string(r->help);
        printf("}");
    }
    printf("],\"strategies\":[");
    for (size_t i = 0; i < mk_strategy_count; i++) {
        printf("%s{\"name\":", i ? "," : "");
        json_string(mk_strategy_at(i)->name);
        printf(",\"matched\":");
        json_string(mk_strategy_at(i)->matched);
        printf(",\"defaults\":{");
        int first = 1;
        for (size_t t = 0; t < MK_TUNABLE_COUNT; t++) {
            mk_strategy_rule_text(i, t, text, text + sizeof text);
            if (!text[0])   /* not a per-CPU tunable */
                continue;
            printf("%s", first ? "" : ",");
            first = 0;
            json_string(mk_tunable_rows[t].name);
            putchar(':');
            json_string(text);
        }
        printf("}}");
    }
    printf("]}\n");
    return 0;
}
