/* One option parser for every native benchmark, driven by a table.
 *
 * The table and the struct it fills are generated from the benchmark's Python
 * descriptor (src/commscope/benchspec/<name>.py) into cs_<name>_options.h by
 * commscope.benchspec.cgen: the options, their defaults and their help are written
 * once, there.  Every value is checked as it is parsed (cs_die names the option and
 * the text it got), so a benchmark's main() needs no error path for its options.
 */
#ifndef CS_OPTIONS_H
#define CS_OPTIONS_H

#include <stddef.h>

typedef enum {
    CS_OPT_INT,     /* long */
    CS_OPT_FLOAT,   /* double, finite, >= 0 */
    CS_OPT_SIZE,    /* long long, cs_parse_size syntax */
    CS_OPT_RANGE,   /* two long long: MIN at offset, MAX at offset2 */
    CS_OPT_SIZES,   /* long long[max_items] at offset, int count at offset2 */
    CS_OPT_INTS,    /* long[max_items] at offset, int count at offset2 */
    CS_OPT_CHOICE,  /* int: index in choices */
    CS_OPT_CHOICES, /* int[max_items] indices at offset, int count at offset2 */
    CS_OPT_FLAG,    /* int: 1 when given */
    CS_OPT_TEXT     /* const char *: points into argv */
} cs_opt_kind_t;

typedef struct {
    const char *name; /* long option, without "--" */
    int short_name;   /* a letter, or 0 */
    cs_opt_kind_t kind;
    size_t offset, offset2;   /* where the value (and a range's MAX / a list's count) go */
    const char *default_text; /* parsed as if typed; NULL: zero / empty (a choice -1, a
                                 float NAN: "not given") */
    double minimum;           /* numbers (each item of a list) below it are refused */
    const char *const *choices;
    int nchoices;
    int max_items;
    const char *help;
} cs_option_t;

/* Parse argv into opts (defaults first), with --out DIR and --help always known; the
 * generated struct's first member is `const char *out` (--out DIR).
 * Returns -1 when the program should go on; otherwise the exit status to return from
 * main after the usage was printed (rank 0 only) and MPI_Finalize was called: 0 for
 * --help, 2 for an unknown option. */
int cs_parse_options(int argc, char **argv, const cs_option_t *table, int n, void *opts,
                     const char *program, int rank);

#endif
