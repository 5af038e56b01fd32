/* What the parts of libcorun_pfs.so share (preload.c: the settings, the
 * connection, open and close, MPI; calls.c: the transfers and the name calls). */
#ifndef CORUN_PFS_PRELOAD_H
#define CORUN_PFS_PRELOAD_H

#include "stripe.h"

#include <pthread.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))
#define FD_MAX 65536
#define NAME_MAX_LEN 4096

/* An open file on the prefix. */
struct handle {
	pthread_mutex_t lock;
	struct pfs_file *file;
	int64_t pos;
};

/* The C library's functions, each resolved on first use with dlsym(RTLD_NEXT)
 * (libc_next() aborts when one is missing). */
#define REAL(name) static __typeof__(name) *real_##name
void *libc_next(const char *name);
/* The C library's NAME, looked up on first use (a call may come before this
 * library's constructors would run). */
#define RESOLVE(var, name)                                      \
	(*({                                                    \
		if (!var)                                       \
			var = (__typeof__(var))libc_next(name); \
		var;                                            \
	}))

/* The connection to the data servers (made once per process), or NULL with
 * errno set. */
struct pfs_fs *connection(void);
/* The name inside the file system of PATH (written to BUF, NAME_MAX_LEN bytes),
 * or NULL when PATH is not on the prefix. */
const char *inner(const char *path, char *buf);
/* The open file on the prefix behind FD, or NULL. */
struct handle *handle_of(int fd);

#endif
