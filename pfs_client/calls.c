/* libcorun_pfs.so's transfers and name calls on the prefix (preload.c has the
 * settings, the connection, open and close). */
#define _GNU_SOURCE

#include "preload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

REAL(read);
REAL(write);
REAL(pread);
REAL(pwrite);
REAL(lseek);
REAL(fsync);
REAL(fdatasync);
REAL(fstat);
REAL(stat);
REAL(lstat);
REAL(ftruncate);
REAL(truncate);
REAL(access);
REAL(unlink);
REAL(mkdir);
REAL(rmdir);
REAL(rename);
REAL(statvfs);

/* ---- transfers --------------------------------------------------------- */

EXPORT ssize_t read(int fd, void *buf, size_t count)
{
	struct handle *h = handle_of(fd);
	if (!h)
		return RESOLVE(real_read, "read")(fd, buf, count);
	pthread_mutex_lock(&h->lock);
	ssize_t n = pfs_pread(h->file, buf, count, h->pos);
	if (n > 0)
		h->pos += n;
	pthread_mutex_unlock(&h->lock);
	return n;
}

EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
	struct handle *h = handle_of(fd);
	if (!h)
		return RESOLVE(real_write, "write")(fd, buf, count);
	pthread_mutex_lock(&h->lock);
	ssize_t n = pfs_pwrite(h->file, buf, count, h->pos);
	if (n > 0)
		h->pos += n;
	pthread_mutex_unlock(&h->lock);
	return n;
}

EXPORT ssize_t pread(int fd, void *buf, size_t count, off_t off)
{
	struct handle *h = handle_of(fd);
	if (!h)
		return RESOLVE(real_pread, "pread")(fd, buf, count, off);
	return pfs_pread(h->file, buf, count, off);
}

EXPORT ssize_t pread64(int fd, void *buf, size_t count, off_t off)
{
	return pread(fd, buf, count, off);
}

EXPORT ssize_t pwrite(int fd, const void *buf, size_t count, off_t off)
{
	struct handle *h = handle_of(fd);
	if (!h)
		return RESOLVE(real_pwrite, "pwrite")(fd, buf, count, off);
	return pfs_pwrite(h->file, buf, count, off);
}

EXPORT ssize_t pwrite64(int fd, const void *buf, size_t count, off_t off)
{
	return pwrite(fd, buf, count, off);
}

EXPORT off_t lseek(int fd, off_t off, int whence)
{
	struct handle *h = handle_of(fd);
	if (!h)
		return RESOLVE(real_lseek, "lseek")(fd, off, whence);
	pthread_mutex_lock(&h->lock);
	int64_t base = 0;
	if (whence == SEEK_CUR)
		base = h->pos;
	else if (whence == SEEK_END)
		base = pfs_size(h->file);
	else if (whence != SEEK_SET)
		base = -2;
	off_t rc = -1;
	if (base == -2 || (base >= 0 && base + off < 0))
		errno = EINVAL;
	else if (base >= 0)
		rc = h->pos = base + off;
	pthread_mutex_unlock(&h->lock);
	return rc;
}

EXPORT off_t lseek64(int fd, off_t off, int whence)
{
	return lseek(fd, off, whence);
}

EXPORT int fsync(int fd)
{
	struct handle *h = handle_of(fd);
	return h ? pfs_fsync(h->file) : RESOLVE(real_fsync, "fsync")(fd);
}

EXPORT int fdatasync(int fd)
{
	struct handle *h = handle_of(fd);
	return h ? pfs_fsync(h->file) : RESOLVE(real_fdatasync, "fdatasync")(fd);
}

EXPORT int ftruncate(int fd, off_t size)
{
	struct handle *h = handle_of(fd);
	return h ? pfs_ftruncate(h->file, size) : RESOLVE(real_ftruncate, "ftruncate")(fd, size);
}

EXPORT int ftruncate64(int fd, off_t size)
{
	return ftruncate(fd, size);
}

EXPORT int truncate(const char *path, off_t size)
{
	char buf[NAME_MAX_LEN];
	const char *name = inner(path, buf);
	if (!name)
		return RESOLVE(real_truncate, "truncate")(path, size);
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	int rc = ftruncate(fd, size), err = errno;
	close(fd);
	errno = err;
	return rc;
}

EXPORT int truncate64(const char *path, off_t size)
{
	return truncate(path, size);
}

/* ---- metadata ---------------------------------------------------------- */

/* The prefix itself is the file system's root folder. */
static int serve_stat(const char *name, struct stat *st)
{
	struct pfs_fs *fs = connection();
	return fs ? pfs_stat(fs, name, st) : -1;
}

EXPORT int fstat(int fd, struct stat *st)
{
	struct handle *h = handle_of(fd);
	return h ? pfs_fstat(h->file, st) : RESOLVE(real_fstat, "fstat")(fd, st);
}

EXPORT int fstat64(int fd, struct stat64 *st)
{
	return fstat(fd, (struct stat *)st);
}

EXPORT int stat(const char *path, struct stat *st)
{
	char buf[NAME_MAX_LEN];
	const char *name = inner(path, buf);
	return name ? serve_stat(name, st) : RESOLVE(real_stat, "stat")(path, st);
}

EXPORT int stat64(const char *path, struct stat64 *st)
{
	return stat(path, (struct stat *)st);
}

EXPORT int lstat(const char *path, struct stat *st)
{
	char buf[NAME_MAX_LEN];
	const char *name = inner(path, buf);
	return name ? serve_stat(name, st) : RESOLVE(real_lstat, "lstat")(path, st);
}

EXPORT int lstat64(const char *path, struct stat64 *st)
{
	return lstat(path, (struct stat *)st);
}

EXPORT int access(const char *path, int mode)
{
	char buf[NAME_MAX_LEN];
	const char *name = inner(path, buf);
	if (!name)
		return RESOLVE(real_access, "access")(path, mode);
	struct pfs_fs *fs = connection();
	return fs ? pfs_access(fs, name, mode) : -1;
}

EXPORT int unlink(const char *path)
{
	char buf[NAME_MAX_LEN];
	const char *name = inner(path, buf);
	if (!name)
		return RESOLVE(real_unlink, "unlink")(path);
	struct pfs_fs *fs = connection();
	return fs ? pfs_unlink(fs, name) : -1;
}

EXPORT int mkdir(const char *path, mode_t mode)
{
	char buf[NAME_MAX_LEN];
	const char *name = inner(path, buf);
	if (!name)
		return RESOLVE(real_mkdir, "mkdir")(path, mode);
	struct pfs_fs *fs = connection();
	return fs ? pfs_mkdir(fs, name, mode) : -1;
}

EXPORT int rmdir(const char *path)
{
	char buf[NAME_MAX_LEN];
	const char *name = inner(path, buf);
	if (!name)
		return RESOLVE(real_rmdir, "rmdir")(path);
	struct pfs_fs *fs = connection();
	return fs ? pfs_rmdir(fs, name) : -1;
}

EXPORT int rename(const char *from, const char *to)
{
	char a[NAME_MAX_LEN], b[NAME_MAX_LEN];
	const char *na = inner(from, a), *nb = inner(to, b);
	if (!na && !nb)
		return RESOLVE(real_rename, "rename")(from, to);
	if (!na || !nb) {
		errno = EXDEV; /* across the prefix */
		return -1;
	}
	struct pfs_fs *fs = connection();
	return fs ? pfs_rename(fs, na, nb) : -1;
}

EXPORT int statvfs(const char *path, struct statvfs *st)
{
	char buf[NAME_MAX_LEN];
	const char *name = inner(path, buf);
	if (!name)
		return RESOLVE(real_statvfs, "statvfs")(path, st);
	struct pfs_fs *fs = connection();
	return fs ? pfs_statvfs(fs, name, st) : -1;
}

EXPORT int statvfs64(const char *path, struct statvfs64 *st)
{
	_Static_assert(sizeof(struct statvfs) == sizeof(struct statvfs64), "statvfs is statvfs64");
	return statvfs(path, (struct statvfs *)st);
}
