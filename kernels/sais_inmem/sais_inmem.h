/* sais_inmem's parts (kernels/sais_inmem.c is the driver, with the options, the
 * cache-miss counter and the result): the strip files, the reader threads and
 * the assembler of one application (app.c). */
#ifndef SAIS_INMEM_H
#define SAIS_INMEM_H

#define _GNU_SOURCE

#include "corun_kernel.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define PROG "sais_inmem"
#define SAIS_INMEM_VERSION "1.0.0"

#define APPS_MAX 256
#define FILES_MAX 256
#define SLOTS_MAX 1024
#define CPU_MAX 64
#define STRIP_MIN 4096
#define STRIP_MAX (INT64_C(16) << 20)
#define REQUEST_MAX (INT64_C(1) << 30)
#define FILE_SIZE_MAX (INT64_C(1) << 34)
#define PATTERN_MUL UINT64_C(0x9e3779b97f4a7c15)
#define PATTERN_XOR UINT64_C(0x5a1500000000c0de)

enum mode { MODE_THREAD, MODE_PROCESS };
enum pin { PIN_AUTO, PIN_SAME, PIN_NONE };

struct options {
	enum mode mode;
	enum pin pin;
	int64_t apps;
	int64_t files;
	int64_t strip;
	int64_t request;
	int64_t file_size;
	int64_t slots;
	double duration_s;
	double warmup_s;
	const char *dir;
	bool keep_files;
};

/* What one worker (reader or assembler) did while the measurement ran. */
struct worker_stats {
	double user_s;
	double sys_s;
	int64_t strips;
	int64_t on_cpu[CPU_MAX]; /* strips handled per CPU (sched_getcpu) */
	int64_t on_cpu_other;    /* CPUs >= CPU_MAX */
};

/* One application's shared region (MAP_SHARED, so a forked reader sees it);
 * the slot data follows the header. */
struct app {
	sem_t empty;
	sem_t full;
	atomic_int stop;
	atomic_int measuring;
	int cpu;          /* pinned CPU, or -1 */
	int64_t bytes;    /* assembled while measuring */
	int64_t requests; /* assembled while measuring */
	int64_t same_cpu; /* strips consumed on the CPU that read them */
	double measured_s;
	struct worker_stats reader;
	struct worker_stats assembler;
	int failed; /* 0 ok, else CORUN_EXIT_RUNTIME */
	char error[256];
	/* per slot: logical strip index and reading CPU, then data */
};

struct slot_head {
	int64_t strip;
	int32_t cpu;
	int32_t pad;
};

struct ctx {
	const struct options *o;
	struct app *a;
	int fds[FILES_MAX];
	size_t slot_bytes;
};

/* app.c */
int make_files(const struct options *o, int *fds);
void remove_files(const struct options *o, int *fds);
int run_app(struct ctx *c);

#endif /* SAIS_INMEM_H */
