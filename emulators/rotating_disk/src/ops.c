/* The FUSE operations of the front end (serve.c): one directory holding one
 * file, the image.  Reads and writes are queued for the dispatcher (queue.c),
 * which replies at the time the model gives; in untimed mode they are answered
 * at once.  SEEK_DATA and SEEK_HOLE answer from the map of chunks (image.c). */
#define _GNU_SOURCE
#include "server.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct server *srv(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void fill_attr(const struct server *s, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (ino == ROOT_INO) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = (off_t)s->c->p.size_bytes;
		st->st_blksize = RD_SECTOR;
		st->st_blocks = (blkcnt_t)(s->c->p.size_bytes / 512);
	}
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct server *s = srv(req);
	struct fuse_entry_param e;

	if (parent != ROOT_INO || strcmp(name, s->c->name)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = FILE_INO;
	e.attr_timeout = 3600;
	e.entry_timeout = 3600;
	fill_attr(s, FILE_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino != ROOT_INO && ino != FILE_INO) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(srv(req), ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct server *s = srv(req);
	struct stat st;

	(void)fi;
	if (ino != FILE_INO) {
		fuse_reply_err(req, EPERM);
		return;
	}
	/* The image has a fixed size; other attributes are accepted and ignored. */
	if ((to_set & FUSE_SET_ATTR_SIZE) && (uint64_t)attr->st_size != s->c->p.size_bytes) {
		fuse_reply_err(req, EPERM);
		return;
	}
	fill_attr(s, ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != FILE_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

static struct sreq *new_req(fuse_req_t freq, uint64_t off, uint64_t len, bool write)
{
	struct sreq *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->freq = freq;
	q->r.offset = off;
	q->r.length = len;
	q->r.write = write;
	return q;
}

/* In untimed mode, count the request and return true: it is answered at once. */
static bool untimed_count(struct server *s, uint64_t len)
{
	bool untimed;

	pthread_mutex_lock(&s->mu);
	untimed = s->untimed;
	if (untimed) {
		s->untimed_requests++;
		s->untimed_bytes += len;
	}
	pthread_mutex_unlock(&s->mu);
	return untimed;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct server *s = srv(req);
	uint64_t o = (uint64_t)off, len = size;
	struct sreq *q;

	(void)fi;
	if (ino != FILE_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (o >= s->c->p.size_bytes || len == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (len > s->c->p.size_bytes - o)
		len = s->c->p.size_bytes - o;
	if (untimed_count(s, len)) {
		fuse_reply_buf(req, (const char *)s->image + o, len);
		return;
	}
	q = new_req(req, o, len, false);
	if (!q || enqueue(s, q)) {
		free(q);
		fuse_reply_err(req, EIO);
		return;
	}
	pthread_mutex_lock(&s->mu);
	s->reads++;
	s->bytes_read += len;
	pthread_mutex_unlock(&s->mu);
}

/* SEEK_DATA and SEEK_HOLE from the map (lseek(2)'s rules: ENXIO at or past the end, or when
 * no data follows OFF); the kernel answers the other whences itself. */
static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct server *s = srv(req);
	uint64_t size = s->c->p.size_bytes, n = nchunks(s), i;

	(void)fi;
	if (ino != FILE_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (whence != SEEK_DATA && whence != SEEK_HOLE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (off < 0 || (uint64_t)off >= size) {
		fuse_reply_err(req, ENXIO);
		return;
	}
	for (i = (uint64_t)off >> CHUNK_SHIFT; i < n; i++)
		if (chunk_marked(s, i) == (whence == SEEK_DATA))
			break;
	if (i == n) {
		if (whence == SEEK_DATA)
			fuse_reply_err(req, ENXIO);
		else
			fuse_reply_lseek(req, (off_t)size);
		return;
	}
	i <<= CHUNK_SHIFT;
	fuse_reply_lseek(req, (off_t)(i > (uint64_t)off ? i : (uint64_t)off));
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct server *s = srv(req);
	uint64_t o = (uint64_t)off;
	struct sreq *q;
	bool ack;

	(void)fi;
	if (ino != FILE_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (o > s->c->p.size_bytes || size > s->c->p.size_bytes - o) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	if (size == 0) {
		fuse_reply_write(req, 0);
		return;
	}
	/* The receive buffer is reused: the data goes to the image now, the
	 * reply waits for the model. */
	memcpy(s->image + o, buf, size);
	mark_written(s, buf, o, size);
	if (untimed_count(s, size)) {
		fuse_reply_write(req, size);
		return;
	}
	pthread_mutex_lock(&s->mu);
	s->writes++;
	s->bytes_written += size;
	ack = s->c->p.write_back && s->dirty + size <= s->c->p.write_cache_bytes;
	if (ack) {
		s->dirty += size;
		s->acked++;
	}
	pthread_mutex_unlock(&s->mu);
	q = new_req(ack ? NULL : req, o, size, true);
	if (!q || enqueue(s, q)) {
		free(q);
		if (ack) {
			pthread_mutex_lock(&s->mu);
			s->dirty -= size;
			pthread_mutex_unlock(&s->mu);
		}
		fuse_reply_err(req, EIO);
		return;
	}
	q->r.acked = ack;
	if (ack)
		fuse_reply_write(req, size);
}

static void op_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	op_ok(req, ino, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct server *s = srv(req);
	const char *names[3] = { ".", "..", s->c->name };
	fuse_ino_t inos[3] = { ROOT_INO, ROOT_INO, FILE_INO };
	char buf[1024];
	size_t used = 0;

	(void)fi;
	if (ino != ROOT_INO) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	for (off_t i = off; i < 3; i++) {
		struct stat st;
		size_t need;

		memset(&st, 0, sizeof(st));
		st.st_ino = inos[i];
		st.st_mode = i < 2 ? S_IFDIR : S_IFREG;
		need = fuse_add_direntry(req, buf + used, sizeof(buf) - used, names[i], &st, i + 1);
		if (used + need > size || used + need > sizeof(buf))
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
}

const struct fuse_lowlevel_ops rd_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_ok,
	.release = op_ok,
	.fsync = op_fsync,
	.readdir = op_readdir,
	.lseek = op_lseek,
};
