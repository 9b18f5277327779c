/* SPDX-License-Identifier: Apache-2.0 */
/* JSON values as the records, verdicts and fingerprint write them, and the
 * records' schema (records.def). */
#include "lab_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void lab_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void lab_json_key(FILE *f, const char *key, int first)
{
    fputs(first ? "{" : ",", f);
    lab_json_string(f, key);
    fputc(':', f);
}

/* The rows of records.def as {"format", "objects": {name: {"line",
 * "meaning", "fields": {key: {"type", "of", "presence", "meaning"}}}}},
 * the words in lower case and of null where the row says _. */
static const struct {
    const char *name;
    int line;
    const char *meaning;
} objects[] = {
#define LAB_OBJECT(name, line, meaning) {#name, line, meaning},
#define LAB_FIELD(object, key, type, of, presence, meaning)
#include "records.def"
#undef LAB_FIELD
#undef LAB_OBJECT
};

static const struct {
    const char *object, *key, *type, *of, *presence, *meaning;
} fields[LAB_NFIELDS] = {
#define LAB_OBJECT(name, line, meaning)
#define LAB_FIELD(object, key, type, of, presence, meaning) \
    {#object, #key, #type, #of, #presence, meaning},
#include "records.def"
#undef LAB_FIELD
#undef LAB_OBJECT
};

static void lower_string(const char *s)
{
    char buf[32];
    size_t i = 0;
    for (; s[i] && i < sizeof buf - 1; i++)
        buf[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
    buf[i] = '\0';
    lab_json_string(stdout, buf);
}

void lab_write_schema(void)
{
    printf("{\"format\":%d,\"objects\":{", LAB_RECORD_FORMAT);
    for (size_t o = 0; o < sizeof objects / sizeof *objects; o++) {
        printf("%s", o ? "," : "");
        lab_json_string(stdout, objects[o].name);
        printf(":{\"line\":%s,\"meaning\":", objects[o].line ? "true" : "false");
        lab_json_string(stdout, objects[o].meaning);
        printf(",\"fields\":{");
        int first = 1;
        for (size_t i = 0; i < LAB_NFIELDS; i++) {
            if (strcmp(fields[i].object, objects[o].name))
                continue;
            printf("%s", first ? "" : ",");
            first = 0;
            lab_json_string(stdout, fields[i].key);
            printf(":{\"type\":");
            lower_string(fields[i].type);
            printf(",\"of\":");
            if (strcmp(fields[i].of, "_"))
                lower_string(fields[i].of);
            else
                printf("null");
            printf(",\"presence\":");
            lower_string(fields[i].presence);
            printf(",\"meaning\":");
            lab_json_string(stdout, fields[i].meaning);
            putchar('}');
        }
        printf("}}");
    }
    printf("}}\n");
}

void lab_json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}
