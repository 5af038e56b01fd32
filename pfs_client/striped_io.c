/* One striped transfer over the datafiles: see striped_io.h. */
#define _GNU_SOURCE

#include "striped_io.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>

/* One request in flight: the per-server parts still outstanding. */
struct pfs_inflight {
	pthread_mutex_t lock;
	pthread_cond_t done;
	int pending;
	int error;
};

static void io_done(glfs_fd_t *fd, ssize_t ret, struct glfs_stat *prestat,
		    struct glfs_stat *poststat, void *data)
{
	(void)fd;
	(void)prestat;
	(void)poststat;
	struct pfs_part *p = data;
	struct pfs_inflight *fl = p->fl;
	int err = ret < 0 ? (errno ? errno : EIO) : 0;
	pthread_mutex_lock(&fl->lock);
	if (err && !fl->error)
		fl->error = err;
	p->got = ret < 0 ? 0 : ret;
	if (--fl->pending == 0)
		pthread_cond_signal(&fl->done);
	pthread_mutex_unlock(&fl->lock);
}

int pfs_striped_io(glfs_fd_t *const *fd, int n, int64_t strip, bool write, unsigned char *buf,
		   int64_t len, int64_t off, struct pfs_part *parts)
{
	struct pfs_inflight fl = { .pending = 0, .error = 0 };
	for (int s = 0; s < n; s++) {
		parts[s].iovcnt = 0;
		parts[s].local_off = -1;
		parts[s].want = 0;
		parts[s].got = 0;
		parts[s].fl = &fl;
	}
	for (int64_t pos = off; pos < off + len;) {
		int64_t k = pos / strip, in_strip = pos % strip;
		int64_t piece = strip - in_strip;
		if (piece > off + len - pos)
			piece = off + len - pos;
		struct pfs_part *p = &parts[k % n];
		if (p->local_off < 0)
			p->local_off = (k / n) * strip + in_strip;
		p->iov[p->iovcnt++] = (struct iovec){ buf + (pos - off), (size_t)piece };
		p->want += piece;
		pos += piece;
	}
	pthread_mutex_init(&fl.lock, NULL);
	pthread_cond_init(&fl.done, NULL);
	pthread_mutex_lock(&fl.lock);
	for (int s = 0; s < n; s++) {
		struct pfs_part *p = &parts[s];
		if (!p->iovcnt)
			continue;
		fl.pending++;
		int rc = write ? glfs_pwritev_async(fd[s], p->iov, p->iovcnt, (off_t)p->local_off,
						    0, io_done, p)
			       : glfs_preadv_async(fd[s], p->iov, p->iovcnt, (off_t)p->local_off, 0,
						   io_done, p);
		if (rc != 0) {
			fl.pending--;
			if (!fl.error)
				fl.error = errno ? errno : EIO;
		}
	}
	while (fl.pending > 0)
		pthread_cond_wait(&fl.done, &fl.lock);
	pthread_mutex_unlock(&fl.lock);
	pthread_mutex_destroy(&fl.lock);
	pthread_cond_destroy(&fl.done);
	if (fl.error) {
		errno = fl.error;
		return -1;
	}
	return 0;
}

bool pfs_striped_whole(const struct pfs_part *parts, int n)
{
	for (int s = 0; s < n; s++)
		if (parts[s].got != parts[s].want)
			return false;
	return true;
}

glfs_fd_t *pfs_datafile_creat(glfs_t *fs, const char *name, int flags, mode_t mode)
{
	glfs_fd_t *fd = glfs_creat(fs, name, flags, mode);
	if (!fd && errno == EEXIST && !(flags & O_EXCL))
		fd = glfs_open(fs, name, flags & ~O_CREAT);
	return fd;
}
