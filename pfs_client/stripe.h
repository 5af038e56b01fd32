/* corun's striped client of its parallel file system (docs/pfs.md): files
 * laid out like PVFS2's simple stripe over N single-brick GlusterFS volumes,
 * read and written in-process through gfapi.
 *
 * Strip k of the strip size lives on data server k mod N, packed in that
 * server's datafile (the same name on every server) at (k div N) * strip.
 * One request becomes at most one contiguous transfer per server, all
 * issued at once (glfs_preadv_async / glfs_pwritev_async) and scattered
 * straight into the caller's buffer.  Each datafile records its layout in
 * the xattr user.corun.pfs.layout ("strip_size=S servers=N index=I"), the
 * same record kernels/pfs_read writes and checks, so either reads the
 * other's files.
 *
 * The interface uses no gfapi type, so a caller need not be built with
 * gfapi's _FILE_OFFSET_BITS (pfs_client/preload.c defines open and open64
 * side by side).  Functions return -1 (or NULL) with errno set on failure.
 */
#ifndef CORUN_PFS_STRIPE_H
#define CORUN_PFS_STRIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#define PFS_SERVERS_MAX 64
#define PFS_LAYOUT_XATTR "user.corun.pfs.layout"

struct pfs_conf {
	const char *volfiles[PFS_SERVERS_MAX]; /* client volfiles, stripe order */
	int n_servers;
	int64_t strip;   /* strip size in bytes */
	bool direct;     /* open datafiles with O_DIRECT */
	const char *log; /* gfapi's log file */
};

struct pfs_fs;   /* a connection: one gfapi instance per data server */
struct pfs_file; /* an open file: one datafile per data server */

/* Connect to every data server; on failure, NULL and a message in ERR. */
struct pfs_fs *pfs_connect(const struct pfs_conf *conf, char *err, size_t err_len);

/* Open NAME ("/..." inside the file system) with open(2)'s FLAGS: O_CREAT
 * creates the datafiles and records the layout, O_TRUNC empties them, an
 * existing file must carry this layout (EINVAL otherwise).  O_APPEND is not
 * supported (EOPNOTSUPP). */
struct pfs_file *pfs_open(struct pfs_fs *fs, const char *name, int flags, mode_t mode);
int pfs_close(struct pfs_file *f);

/* Transfers at a logical offset.  A read stops at the end of the file;
 * holes read as zeros. */
ssize_t pfs_pread(struct pfs_file *f, void *buf, size_t len, int64_t off);
ssize_t pfs_pwrite(struct pfs_file *f, const void *buf, size_t len, int64_t off);

int pfs_fsync(struct pfs_file *f);
int pfs_ftruncate(struct pfs_file *f, int64_t size);
int64_t pfs_size(struct pfs_file *f);
int pfs_fstat(struct pfs_file *f, struct stat *st);

/* Name operations on every data server. */
int pfs_stat(struct pfs_fs *fs, const char *name, struct stat *st);
int pfs_access(struct pfs_fs *fs, const char *name, int mode);
int pfs_unlink(struct pfs_fs *fs, const char *name);
int pfs_mkdir(struct pfs_fs *fs, const char *name, mode_t mode);
int pfs_rmdir(struct pfs_fs *fs, const char *name);
int pfs_rename(struct pfs_fs *fs, const char *from, const char *to);
/* The servers' capacities added up. */
int pfs_statvfs(struct pfs_fs *fs, const char *name, struct statvfs *st);

/* The logical size of a file whose datafiles have the sizes LOCAL[0..N-1]. */
int64_t pfs_logical_size(const int64_t *local, int n, int64_t strip);
/* The size of server I's datafile in a file of logical size SIZE. */
int64_t pfs_local_size(int64_t size, int i, int n, int64_t strip);

#endif
