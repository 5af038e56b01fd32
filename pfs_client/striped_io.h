/* One striped transfer over the datafiles of corun's parallel file system, and the create of
 * a datafile, shared by pfs_client's library (stripe.c) and kernels/pfs_read: a request of
 * LEN bytes at logical offset OFF, laid out like PVFS2's simple stripe (stripe.h), becomes at
 * most one contiguous transfer per data server, all issued at once (glfs_preadv_async /
 * glfs_pwritev_async) and scattered straight into the caller's buffer.
 *
 * Unlike stripe.h it uses gfapi's types: include it only where gfapi's _FILE_OFFSET_BITS
 * is in force. */
#ifndef CORUN_PFS_STRIPED_IO_H
#define CORUN_PFS_STRIPED_IO_H

#include <glusterfs/api/glfs.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct pfs_inflight;

/* One data server's part of a transfer.  The caller sets IOV, room for
 * LEN / (strip * N) + 2 iovecs; pfs_striped_io() fills in the rest. */
struct pfs_part {
	struct iovec *iov;
	int iovcnt;
	int64_t local_off; /* where in the server's datafile; -1: nothing asked of it */
	int64_t want;      /* bytes asked of the server */
	ssize_t got;       /* bytes it transferred */
	struct pfs_inflight *fl;
};

/* Transfer LEN bytes between BUF and logical offset OFF of a file striped in strips of STRIP
 * bytes over the N datafiles FD[0..N-1] (a write if WRITE, else a read), waiting for every
 * server.  Returns 0 with PARTS[s] saying what server s was asked for and transferred, or -1
 * with errno set to the first error of a server. */
int pfs_striped_io(glfs_fd_t *const *fd, int n, int64_t strip, bool write, unsigned char *buf,
		   int64_t len, int64_t off, struct pfs_part *parts);

/* Create the datafile NAME on the data server FS with open(2)'s FLAGS and MODE.  Another
 * client (IOR's ranks, pfs_read's tasks) may create it between GlusterFS's lookup and its
 * create, which fails with EEXIST: without O_EXCL that is an open of the file it made.
 * Returns NULL with errno set on failure. */
glfs_fd_t *pfs_datafile_creat(glfs_t *fs, const char *name, int flags, mode_t mode);

/* Whether every one of the N PARTS transferred all it was asked for (a read past the end
 * of a datafile does not). */
bool pfs_striped_whole(const struct pfs_part *parts, int n);

#endif
