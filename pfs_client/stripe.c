/* corun's striped client of its parallel file system: see stripe.h. */
#define _GNU_SOURCE

#include "stripe.h"
#include "striped_io.h"

#include <errno.h>
#include <fcntl.h>
#include <glusterfs/api/glfs.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

struct pfs_fs {
	int n;
	int64_t strip;
	bool direct;
	glfs_t *fs[PFS_SERVERS_MAX];
};

struct pfs_file {
	struct pfs_fs *fs;
	glfs_fd_t *fd[PFS_SERVERS_MAX];
};

struct pfs_fs *pfs_connect(const struct pfs_conf *conf, char *err, size_t err_len)
{
	struct pfs_fs *fs = calloc(1, sizeof *fs);
	if (!fs) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	fs->n = conf->n_servers;
	fs->strip = conf->strip;
	fs->direct = conf->direct;
	for (int i = 0; i < fs->n; i++) {
		fs->fs[i] = glfs_new("corun-pfs");
		if (!fs->fs[i] || glfs_set_volfile(fs->fs[i], conf->volfiles[i]) != 0 ||
		    glfs_set_logging(fs->fs[i], conf->log, 3) != 0) {
			snprintf(err, err_len, "cannot set up gfapi with %s: %s", conf->volfiles[i],
				 strerror(errno));
			return NULL;
		}
		if (glfs_init(fs->fs[i]) != 0) {
			snprintf(err, err_len, "cannot reach the data server of %s: %s",
				 conf->volfiles[i], strerror(errno));
			return NULL;
		}
	}
	return fs;
}

static void layout_record(const struct pfs_fs *fs, int i, char *out, size_t len)
{
	snprintf(out, len, "strip_size=%" PRId64 " servers=%d index=%d", fs->strip, fs->n, i);
}

int pfs_close(struct pfs_file *f)
{
	int rc = 0, err = 0;
	for (int i = 0; i < f->fs->n; i++) {
		if (f->fd[i] && glfs_close(f->fd[i]) != 0 && !err) {
			err = errno;
			rc = -1;
		}
	}
	free(f);
	if (rc)
		errno = err;
	return rc;
}

struct pfs_file *pfs_open(struct pfs_fs *fs, const char *name, int flags, mode_t mode)
{
	if (flags & O_APPEND) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	struct pfs_file *f = calloc(1, sizeof *f);
	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	f->fs = fs;
	bool create = flags & O_CREAT;
	int dflags = (flags & (O_ACCMODE | O_EXCL | O_TRUNC)) | (fs->direct ? O_DIRECT : 0);
	if (create && (flags & O_ACCMODE) == O_RDONLY)
		dflags = (dflags & ~O_ACCMODE) | O_RDWR; /* to record the layout */
	for (int i = 0; i < fs->n; i++) {
		char layout[96];
		layout_record(fs, i, layout, sizeof layout);
		/* created by another client at once: the layout is set again below, the same */
		f->fd[i] = create ? pfs_datafile_creat(fs->fs[i], name, dflags, mode)
				  : glfs_open(fs->fs[i], name, dflags);
		if (!f->fd[i])
			goto fail;
		if (create) {
			if (glfs_fsetxattr(f->fd[i], PFS_LAYOUT_XATTR, layout, strlen(layout), 0) !=
			    0)
				goto fail;
			continue;
		}
		char got[96] = { 0 };
		ssize_t n = glfs_fgetxattr(f->fd[i], PFS_LAYOUT_XATTR, got, sizeof got - 1);
		if (n < 0 || strcmp(got, layout) != 0) {
			errno = EINVAL; /* written with another strip size or server list */
			goto fail;
		}
	}
	return f;
fail:;
	int err = errno ? errno : EIO;
	pfs_close(f);
	errno = err;
	return NULL;
}

/* The iovecs of a transfer of LEN bytes: at most LEN / (strip * N) + 2 per
 * server; the caller frees them. */
static struct iovec *iovecs(const struct pfs_fs *fs, int64_t len, int64_t *per_server)
{
	*per_server = len / (fs->strip * fs->n) + 2;
	struct iovec *iov = calloc((size_t)(*per_server * fs->n), sizeof *iov);
	if (!iov)
		errno = ENOMEM;
	return iov;
}

int64_t pfs_logical_size(const int64_t *local, int n, int64_t strip)
{
	int64_t size = 0;
	for (int i = 0; i < n; i++) {
		if (local[i] <= 0)
			continue;
		int64_t last = local[i] - 1;
		int64_t end = ((last / strip) * n + i) * strip + last % strip + 1;
		if (end > size)
			size = end;
	}
	return size;
}

int64_t pfs_local_size(int64_t size, int i, int n, int64_t strip)
{
	int64_t row = strip * n;
	int64_t extra = size % row - (int64_t)i * strip;
	if (extra < 0)
		extra = 0;
	if (extra > strip)
		extra = strip;
	return size / row * strip + extra;
}

int64_t pfs_size(struct pfs_file *f)
{
	int64_t local[PFS_SERVERS_MAX];
	for (int i = 0; i < f->fs->n; i++) {
		struct stat st;
		if (glfs_fstat(f->fd[i], &st) != 0)
			return -1;
		local[i] = st.st_size;
	}
	return pfs_logical_size(local, f->fs->n, f->fs->strip);
}

/* One transfer's parts, one per server, and their iovecs. */
struct transfer {
	struct pfs_part parts[PFS_SERVERS_MAX];
	struct iovec *iov;
	int64_t per_server;
};

/* The start of a transfer of LEN bytes at OFF: 1 with the iovecs of T allocated (see
 * iovecs(); the caller frees T->iov) and handed out to its parts, 0 when there is nothing
 * to transfer, -1 with errno set. */
static int transfer_start(struct pfs_file *f, size_t len, int64_t off, struct transfer *t)
{
	if (len == 0)
		return 0;
	if (off < 0) {
		errno = EINVAL;
		return -1;
	}
	t->iov = iovecs(f->fs, (int64_t)len, &t->per_server);
	if (!t->iov)
		return -1;
	for (int s = 0; s < f->fs->n; s++)
		t->parts[s].iov = t->iov + s * t->per_server;
	return 1;
}

ssize_t pfs_pread(struct pfs_file *f, void *buf, size_t len, int64_t off)
{
	struct transfer t;
	int go = transfer_start(f, len, off, &t);
	if (go <= 0)
		return go;
	struct pfs_part *parts = t.parts;
	ssize_t rc = -1;
	if (pfs_striped_io(f->fd, f->fs->n, f->fs->strip, false, buf, (int64_t)len, off, parts))
		goto out;
	if (pfs_striped_whole(parts, f->fs->n)) {
		rc = (ssize_t)len;
		goto out;
	}
	/* Past the end of a datafile: the end of the file, or a hole. */
	int64_t size = pfs_size(f);
	if (size < 0)
		goto out;
	for (int s = 0; s < f->fs->n; s++) {
		int64_t skip = parts[s].got;
		for (int v = 0; v < parts[s].iovcnt; v++) {
			struct iovec *io = &parts[s].iov[v];
			if (skip >= (int64_t)io->iov_len) {
				skip -= (int64_t)io->iov_len;
				continue;
			}
			memset((char *)io->iov_base + skip, 0, io->iov_len - (size_t)skip);
			skip = 0;
		}
	}
	rc = off >= size ? 0 : (ssize_t)((int64_t)len < size - off ? (int64_t)len : size - off);
out:
	free(t.iov);
	return rc;
}

ssize_t pfs_pwrite(struct pfs_file *f, const void *buf, size_t len, int64_t off)
{
	struct transfer t;
	int go = transfer_start(f, len, off, &t);
	if (go <= 0)
		return go;
	/* gfapi takes a non-const iovec; the buffer is only read. */
	int rc = pfs_striped_io(f->fd, f->fs->n, f->fs->strip, true,
				(unsigned char *)(uintptr_t)buf, (int64_t)len, off, t.parts);
	free(t.iov);
	if (rc != 0)
		return -1;
	if (!pfs_striped_whole(t.parts, f->fs->n)) {
		errno = EIO; /* a data server took part of its share only */
		return -1;
	}
	return (ssize_t)len;
}

int pfs_fsync(struct pfs_file *f)
{
	for (int i = 0; i < f->fs->n; i++)
		if (glfs_fsync(f->fd[i], NULL, NULL) != 0)
			return -1;
	return 0;
}

int pfs_ftruncate(struct pfs_file *f, int64_t size)
{
	if (size < 0) {
		errno = EINVAL;
		return -1;
	}
	for (int i = 0; i < f->fs->n; i++) {
		off_t local = (off_t)pfs_local_size(size, i, f->fs->n, f->fs->strip);
		if (glfs_ftruncate(f->fd[i], local, NULL, NULL) != 0)
			return -1;
	}
	return 0;
}

/* A stat of the striped file from its datafiles' stats: server 0's owner,
 * mode and times, the logical size, the blocks of all. */
static void merge_stats(const struct pfs_fs *fs, const struct stat *each, struct stat *st)
{
	int64_t local[PFS_SERVERS_MAX];
	*st = each[0];
	st->st_blocks = 0;
	for (int i = 0; i < fs->n; i++) {
		local[i] = each[i].st_size;
		st->st_blocks += each[i].st_blocks;
	}
	st->st_size = pfs_logical_size(local, fs->n, fs->strip);
	st->st_blksize = fs->strip;
}

int pfs_fstat(struct pfs_file *f, struct stat *st)
{
	struct stat each[PFS_SERVERS_MAX];
	for (int i = 0; i < f->fs->n; i++)
		if (glfs_fstat(f->fd[i], &each[i]) != 0)
			return -1;
	merge_stats(f->fs, each, st);
	return 0;
}

int pfs_stat(struct pfs_fs *fs, const char *name, struct stat *st)
{
	struct stat each[PFS_SERVERS_MAX];
	if (glfs_stat(fs->fs[0], name, &each[0]) != 0)
		return -1;
	if (!S_ISREG(each[0].st_mode)) {
		*st = each[0]; /* a folder: the same on every server */
		return 0;
	}
	for (int i = 1; i < fs->n; i++)
		if (glfs_stat(fs->fs[i], name, &each[i]) != 0)
			return -1;
	merge_stats(fs, each, st);
	return 0;
}

int pfs_access(struct pfs_fs *fs, const char *name, int mode)
{
	return glfs_access(fs->fs[0], name, mode);
}

/* Do OP on every server; the first error is returned, after all were tried.
 * With TOLERATE_ENOENT, a name missing on some servers (a half-removed file)
 * is no error as long as one server had it. */
enum name_op { OP_UNLINK, OP_MKDIR, OP_RMDIR, OP_RENAME };

static int every_server(struct pfs_fs *fs, enum name_op op, const char *a, const char *b,
			mode_t mode)
{
	int err = 0, found = 0;
	for (int i = 0; i < fs->n; i++) {
		int rc = -1;
		switch (op) {
		case OP_UNLINK: rc = glfs_unlink(fs->fs[i], a); break;
		case OP_MKDIR: rc = glfs_mkdir(fs->fs[i], a, mode); break;
		case OP_RMDIR: rc = glfs_rmdir(fs->fs[i], a); break;
		case OP_RENAME: rc = glfs_rename(fs->fs[i], a, b); break;
		}
		if (rc == 0)
			found++;
		else if (!err || err == ENOENT)
			err = errno ? errno : EIO;
	}
	if (err && !(err == ENOENT && found > 0 && op != OP_MKDIR)) {
		errno = err;
		return -1;
	}
	return 0;
}

int pfs_unlink(struct pfs_fs *fs, const char *name)
{
	return every_server(fs, OP_UNLINK, name, NULL, 0);
}

int pfs_mkdir(struct pfs_fs *fs, const char *name, mode_t mode)
{
	return every_server(fs, OP_MKDIR, name, NULL, mode);
}

int pfs_rmdir(struct pfs_fs *fs, const char *name)
{
	return every_server(fs, OP_RMDIR, name, NULL, 0);
}

int pfs_rename(struct pfs_fs *fs, const char *from, const char *to)
{
	return every_server(fs, OP_RENAME, from, to, 0);
}

int pfs_statvfs(struct pfs_fs *fs, const char *name, struct statvfs *st)
{
	if (glfs_statvfs(fs->fs[0], name, st) != 0)
		return -1;
	for (int i = 1; i < fs->n; i++) {
		struct statvfs o;
		if (glfs_statvfs(fs->fs[i], name, &o) != 0)
			return -1;
		/* in server 0's fragment size */
		double scale = st->f_frsize ? (double)o.f_frsize / (double)st->f_frsize : 1.0;
		st->f_blocks += (fsblkcnt_t)((double)o.f_blocks * scale);
		st->f_bfree += (fsblkcnt_t)((double)o.f_bfree * scale);
		st->f_bavail += (fsblkcnt_t)((double)o.f_bavail * scale);
		st->f_files += o.f_files;
		st->f_ffree += o.f_ffree;
		st->f_favail += o.f_favail;
	}
	return 0;
}
