/* The table-driven option parser of the native benchmarks (cs_options.h). */
#define _POSIX_C_SOURCE 200809L /* strdup, strtok_r under -std=c11 too */
#include "cs_options.h"
#include "cs_common.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FIELD(opts, off, type) ((type *)((char *)(opts) + (off)))

static void split_items(const cs_option_t *o, const char *flag, const char *text, void *opts)
{
    char *copy = strdup(text), *save = NULL;
    int n = 0;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (n == o->max_items)
            cs_die("%s: at most %d values, got '%s'", flag, o->max_items, text);
        if (o->kind == CS_OPT_INTS)
            FIELD(opts, o->offset, long)
        [n] = cs_parse_long(flag, item, (long)o->minimum);
        else FIELD(opts, o->offset, int)
            [n] =
                cs_parse_choice(flag, "value", item, o->choices, o->nchoices);
        n++;
    }
    free(copy);
    if (n == 0)
        cs_die("%s: expected a comma-separated list, got '%s'", flag, text);
    *FIELD(opts, o->offset2, int) = n;
}

static void set_value(const cs_option_t *o, const char *text, void *opts)
{
    char flag[64];
    snprintf(flag, sizeof flag, "--%s", o->name);
    switch (o->kind) {
    case CS_OPT_INT:
        *FIELD(opts, o->offset, long) = cs_parse_long(flag, text, (long)o->minimum);
        break;
    case CS_OPT_FLOAT: {
        double v = cs_parse_double(flag, text);
        if (v < o->minimum)
            cs_die("%s: expected a number >= %g, got '%s'", flag, o->minimum, text);
        *FIELD(opts, o->offset, double) = v;
        break;
    }
    case CS_OPT_SIZE: {
        long long v = cs_parse_size(text);
        if (v < (long long)o->minimum)
            cs_die("%s: expected a size >= %.0f, got '%s'", flag, o->minimum, text);
        *FIELD(opts, o->offset, long long) = v;
        break;
    }
    case CS_OPT_RANGE:
        if (cs_parse_range(text, FIELD(opts, o->offset, long long),
                           FIELD(opts, o->offset2, long long)) != 0)
            cs_die("%s: expected MIN:MAX sizes, got '%s'", flag, text);
        break;
    case CS_OPT_SIZES:
        *FIELD(opts, o->offset2, int) =
            cs_parse_size_list(flag, text, (long long)o->minimum,
                               FIELD(opts, o->offset, long long), o->max_items);
        break;
    case CS_OPT_INTS:
    case CS_OPT_CHOICES: split_items(o, flag, text, opts); break;
    case CS_OPT_CHOICE:
        *FIELD(opts, o->offset, int) = cs_parse_choice(flag, "value", text, o->choices, o->nchoices);
        break;
    case CS_OPT_FLAG: *FIELD(opts, o->offset, int) = 1; break;
    case CS_OPT_TEXT: *FIELD(opts, o->offset, const char *) = text; break;
    }
}

static void usage(const cs_option_t *table, int n, const char *program)
{
    fprintf(stderr, "usage: %s [options] --out DIR\n", program);
    for (int i = 0; i < n; i++) {
        const cs_option_t *o = &table[i];
        char head[64];
        if (o->short_name)
            snprintf(head, sizeof head, "-%c, --%s", o->short_name, o->name);
        else
            snprintf(head, sizeof head, "    --%s", o->name);
        fprintf(stderr, "  %-26s %s", head, o->help);
        if (o->default_text)
            fprintf(stderr, " (default %s)", o->default_text);
        fputc('\n', stderr);
    }
    fprintf(stderr, "  %-26s %s\n", "    --out DIR", "where the tables are written");
}

int cs_parse_options(int argc, char **argv, const cs_option_t *table, int n, void *opts,
                     const char *program, int rank)
{
    /* getopt_long's tables: every option of the table, then --out and --help */
    struct option *longopts = cs_xmalloc(sizeof(struct option) * (size_t)(n + 3));
    char *shorts = cs_xmalloc((size_t)(3 * n + 2));
    size_t ns = 0;
    for (int i = 0; i < n; i++) {
        const cs_option_t *o = &table[i];
        int has_arg = o->kind == CS_OPT_FLAG ? no_argument : required_argument;
        longopts[i] = (struct option){o->name, has_arg, 0, 256 + i};
        if (o->short_name) {
            shorts[ns++] = (char)o->short_name;
            if (has_arg == required_argument)
                shorts[ns++] = ':';
        }
        if (o->default_text && o->kind != CS_OPT_FLAG)
            set_value(o, o->default_text, opts);
        else if (o->kind == CS_OPT_CHOICE) /* no default: -1 until given */
            *FIELD(opts, o->offset, int) = -1;
        else if (o->kind == CS_OPT_FLOAT) /* no default: NAN until given */
            *FIELD(opts, o->offset, double) = NAN;
    }
    shorts[ns++] = 'h';
    shorts[ns] = '\0';
    longopts[n] = (struct option){"out", required_argument, 0, 256 + n};
    longopts[n + 1] = (struct option){"help", no_argument, 0, 'h'};
    longopts[n + 2] = (struct option){0, 0, 0, 0};

    int status = -1;
    for (int c; status < 0 && (c = getopt_long(argc, argv, shorts, longopts, NULL)) != -1;) {
        int i = -1;
        if (c >= 256)
            i = c - 256;
        else
            for (int k = 0; k < n; k++)
                if (table[k].short_name == c)
                    i = k;
        if (i == n)
            *FIELD(opts, 0, const char *) = optarg; /* --out: the struct's first member */
        else if (i >= 0)
            set_value(&table[i], optarg, opts);
        else {
            if (rank == 0)
                usage(table, n, program);
            MPI_Finalize();
            status = c == 'h' ? 0 : 2;
        }
    }
    free(longopts);
    free(shorts);
    return status;
}
