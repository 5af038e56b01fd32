/* pfs_read's parts (kernels/pfs_read.c is the driver, with the options and the
 * result): one task's gfapi client and its striped requests (client.c, with the
 * striped transfer of pfs_client/striped_io.c), the tasks' pipes, the barrier
 * and a task's life (task.c). */
#ifndef PFS_READ_H
#define PFS_READ_H

#define _GNU_SOURCE

#include "corun_kernel.h"
#include "striped_io.h"

#include <fcntl.h>
#include <glusterfs/api/glfs.h>
#include <pthread.h>
#include <signal.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <sys/uio.h>
#include <sys/wait.h>

#define PROG "pfs_read"
#define PFS_READ_VERSION "1.0.0"

#define SERVERS_MAX 64
#define TASKS_MAX 256
#define RANKS_MAX 65536
#define SIZE_MAX_OPT (INT64_C(1) << 40)
#define XATTR_NAME "user.corun.pfs.layout"
#define MIX_MUL UINT64_C(0x9E3779B97F4A7C15)

enum phase { PHASE_WRITE, PHASE_READ };
enum pattern { PATTERN_STRIDED, PATTERN_CONTIGUOUS };

struct options {
	const char *volfiles[SERVERS_MAX];
	int n_servers;
	const char *file;
	int64_t strip;
	int64_t transfer;
	int64_t block;
	int64_t segments;
	int64_t tasks;
	int64_t rank;  /* the first task's index in the application */
	int64_t ranks; /* tasks of the application (0: --tasks) */
	int64_t app;
	enum pattern pattern;
	int64_t reps;
	int64_t compute_passes;
	uint64_t seed;
	bool file_per_process;
	bool do_write;
	bool do_read;
	bool check;
	bool direct;
	const char *barrier;
	int64_t barrier_count;
	const char *log;
};

/* What a task sends back after a phase. */
struct task_result {
	double start_s;
	double end_s;
	int64_t bytes;
	int64_t requests;
	int64_t mismatches;
	uint64_t checksum;
	int error; /* 0 or an errno value */
	char what[160];
};

/* Per task: one gfapi instance, one open datafile and one request's part (with
 * its iovecs) per server. */
struct client {
	int n;
	glfs_t *fs[SERVERS_MAX];
	glfs_fd_t *fd[SERVERS_MAX];
	struct pfs_part part[SERVERS_MAX];
};

/* client.c */
void fail(struct task_result *r, int err, const char *fmt, const char *a);
int client_init(struct client *c, const struct options *o, struct task_result *r);
int client_open(struct client *c, const struct options *o, const char *name, bool create,
		struct task_result *r);
void client_close(struct client *c);
void run_phase(struct client *c, const struct options *o, enum phase ph, int64_t task,
	       unsigned char *buf, struct task_result *r);

/* task.c */
int barrier_wait(const struct options *o, char *error, size_t len);
int read_all(int fd, void *p, size_t n);
int write_all(int fd, const void *p, size_t n);
int task_main(const struct options *o, int64_t task, int go_fd, int res_fd,
	      const enum phase *phases, int n_phases);

#endif /* PFS_READ_H */
