/* The daemon's other modes: --check (is a daemon alive and on time), --decide-table (one
 * decision on a hand-made table), --bench-decide (decision time). */
#ifndef DIO_MODES_H
#define DIO_MODES_H

#include <sys/types.h>

#define PROG "corun-dynamic-io"
#define MAX_CMPS 4096

/* Seconds from CLOCK_MONOTONIC. */
double now_mono(void);

int run_check(const char *dir, double max_age);
int run_table(const char *file);
int run_bench(long n, long rounds, int ncmp);

#endif /* DIO_MODES_H */
