/* pfs_read: the data pattern, the compute step, and one task's gfapi client
 * with its striped requests. */
#include "pfs_read.h"

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	return x;
}

/* The 8-byte word at logical offset OFF (a multiple of 8) of file FILE_ID. */
static uint64_t pattern_word(uint64_t seed, uint64_t file_id, uint64_t off)
{
	return mix64(off ^ (seed * MIX_MUL) ^ (file_id << 56));
}

static void fill_pattern(unsigned char *buf, size_t len, uint64_t seed, uint64_t file_id,
			 uint64_t off)
{
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t w = pattern_word(seed, file_id, off + i);
		memcpy(buf + i, &w, 8);
	}
}

static int64_t count_mismatches(const unsigned char *buf, size_t len, uint64_t seed,
				uint64_t file_id, uint64_t off)
{
	int64_t bad = 0;
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, buf + i, 8);
		if (w != pattern_word(seed, file_id, off + i))
			bad++;
	}
	return bad;
}

/* The per-request compute step: PASSES passes of a multiply-xor mix. */
static uint64_t compute_step(const unsigned char *buf, size_t len, int64_t passes, uint64_t h)
{
	for (int64_t p = 0; p < passes; p++) {
		for (size_t i = 0; i + 8 <= len; i += 8) {
			uint64_t w;
			memcpy(&w, buf + i, 8);
			h = (h ^ w) * MIX_MUL;
			h ^= h >> 29;
		}
	}
	return h;
}

void fail(struct task_result *r, int err, const char *fmt, const char *a)
{
	if (r->error)
		return;
	r->error = err ? err : EIO;
	/* The value is cut to fit; the return value is looked at so the
	 * compiler knows the cut is meant. */
	if (snprintf(r->what, sizeof r->what, fmt, a) >= (int)sizeof r->what)
		r->what[sizeof r->what - 2] = '~';
}

/* Connect to every data server: one gfapi instance each. */
int client_init(struct client *c, const struct options *o, struct task_result *r)
{
	c->n = o->n_servers;
	size_t max_iov = (size_t)(o->transfer / o->strip + 2);
	for (int i = 0; i < c->n; i++) {
		c->fs[i] = glfs_new("corun-pfs");
		if (!c->fs[i] || glfs_set_volfile(c->fs[i], o->volfiles[i]) != 0 ||
		    glfs_set_logging(c->fs[i], o->log, 3) != 0) {
			fail(r, errno, "cannot set up gfapi with %s", o->volfiles[i]);
			return -1;
		}
		if (glfs_init(c->fs[i]) != 0) {
			fail(r, errno, "cannot reach the data server of %s", o->volfiles[i]);
			return -1;
		}
		c->part[i].iov = calloc(max_iov, sizeof(struct iovec));
		if (!c->part[i].iov) {
			fail(r, ENOMEM, "%s", "out of memory");
			return -1;
		}
	}
	return 0;
}

/* Open (or create, recording the layout) the datafile NAME on every server;
 * an existing datafile must carry this layout. */
int client_open(struct client *c, const struct options *o, const char *name, bool create,
		struct task_result *r)
{
	for (int i = 0; i < c->n; i++) {
		if (c->fd[i]) {
			glfs_close(c->fd[i]);
			c->fd[i] = NULL;
		}
		char layout[96];
		snprintf(layout, sizeof layout, "strip_size=%" PRId64 " servers=%d index=%d",
			 o->strip, c->n, i);
		if (create) {
			/* the tasks create their shared file at once */
			c->fd[i] = pfs_datafile_creat(c->fs[i], name,
						      O_RDWR | (o->direct ? O_DIRECT : 0), 0644);
			if (c->fd[i] &&
			    glfs_fsetxattr(c->fd[i], XATTR_NAME, layout, strlen(layout), 0) != 0) {
				fail(r, errno, "cannot record the layout of %s", name);
				return -1;
			}
		} else {
			c->fd[i] = glfs_open(c->fs[i], name, O_RDONLY | (o->direct ? O_DIRECT : 0));
		}
		if (!c->fd[i]) {
			fail(r, errno, "cannot open %s", name);
			return -1;
		}
		if (!create) {
			char got[96] = { 0 };
			ssize_t n = glfs_fgetxattr(c->fd[i], XATTR_NAME, got, sizeof got - 1);
			if (n < 0 || strcmp(got, layout) != 0) {
				fail(r, n < 0 ? errno : EINVAL,
				     "%s was not written with this strip size and server list",
				     name);
				return -1;
			}
		}
	}
	return 0;
}

/* Close the datafiles.  glfs_fini() is not called: in GlusterFS 10 it waits
 * about 10 s for a timer per instance, and the task exits right after, which
 * closes the connections. */
void client_close(struct client *c)
{
	for (int i = 0; i < c->n; i++) {
		if (c->fd[i])
			glfs_close(c->fd[i]);
		c->fd[i] = NULL;
		free(c->part[i].iov);
		c->part[i].iov = NULL;
	}
}

/* One request of LEN bytes at logical offset OFF, all servers at once. */
static int striped_io(struct client *c, const struct options *o, enum phase ph, unsigned char *buf,
		      int64_t off, int64_t len)
{
	if (pfs_striped_io(c->fd, c->n, o->strip, ph == PHASE_WRITE, buf, len, off, c->part) != 0)
		return -1;
	if (!pfs_striped_whole(c->part, c->n)) {
		errno = ENODATA; /* a read past the end of a datafile */
		return -1;
	}
	return 0;
}

void run_phase(struct client *c, const struct options *o, enum phase ph, int64_t task,
	       unsigned char *buf, struct task_result *r)
{
	int64_t g = o->rank + task; /* the task's index in the application */
	uint64_t file_id = o->file_per_process ? (uint64_t)g : 0;
	/* each application's data differ */
	uint64_t seed = o->seed + ((uint64_t)o->app << 32);
	int64_t per_block = o->block / o->transfer;
	r->start_s = corun_monotonic_s();
	for (int64_t seg = 0; seg < o->segments && !r->error; seg++) {
		int64_t base;
		if (o->file_per_process)
			base = seg * o->block;
		else if (o->pattern == PATTERN_STRIDED)
			base = (seg * o->ranks + g) * o->block;
		else
			base = (g * o->segments + seg) * o->block;
		for (int64_t i = 0; i < per_block; i++) {
			int64_t off = base + i * o->transfer;
			if (ph == PHASE_WRITE)
				fill_pattern(buf, (size_t)o->transfer, seed, file_id,
					     (uint64_t)off);
			if (striped_io(c, o, ph, buf, off, o->transfer) != 0) {
				fail(r, errno, "%s failed",
				     ph == PHASE_READ ? "a read" : "a write");
				break;
			}
			if (ph == PHASE_READ) {
				r->checksum = compute_step(buf, (size_t)o->transfer,
							   o->compute_passes, r->checksum);
				if (o->check)
					r->mismatches +=
						count_mismatches(buf, (size_t)o->transfer, seed,
								 file_id, (uint64_t)off);
			}
			r->bytes += o->transfer;
			r->requests++;
		}
	}
	r->end_s = corun_monotonic_s();
}
