/* The image of the FUSE front end (serve.c) and its map of chunks that may hold
 * data: the --load file mapped copy-on-write, its data chunks marked, and the
 * chunks a write puts data in. */
#define _GNU_SOURCE
#include "server.h"

#include "corun_kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t nchunks(const struct server *s)
{
	return (s->c->p.size_bytes + (1ULL << CHUNK_SHIFT) - 1) >> CHUNK_SHIFT;
}

static void mark_chunks(struct server *s, uint64_t off, uint64_t len)
{
	uint64_t i, last;

	if (!s->chunks || len == 0)
		return;
	last = (off + len - 1) >> CHUNK_SHIFT;
	for (i = off >> CHUNK_SHIFT; i <= last; i++)
		__atomic_fetch_or(&s->chunks[i / 64], 1ULL << (i % 64), __ATOMIC_RELAXED);
}

bool chunk_marked(const struct server *s, uint64_t i)
{
	return !s->chunks ||
	       (__atomic_load_n(&s->chunks[i / 64], __ATOMIC_RELAXED) >> (i % 64) & 1);
}

static bool all_zero(const char *buf, size_t len)
{
	return len == 0 || (buf[0] == 0 && !memcmp(buf, buf + 1, len - 1));
}

/* A write marks the chunks it puts non-zero bytes in: zeros written over a chunk not yet
 * marked leave it as it was, all zeros (mkfs's zeroed inode tables, spread over the disk). */
void mark_written(struct server *s, const char *buf, uint64_t off, uint64_t len)
{
	uint64_t i, last, start, end;

	if (!s->chunks || len == 0)
		return;
	last = (off + len - 1) >> CHUNK_SHIFT;
	for (i = off >> CHUNK_SHIFT; i <= last; i++) {
		if (chunk_marked(s, i))
			continue;
		start = i << CHUNK_SHIFT > off ? i << CHUNK_SHIFT : off;
		end = (i + 1) << CHUNK_SHIFT < off + len ? (i + 1) << CHUNK_SHIFT : off + len;
		if (!all_zero(buf + (start - off), (size_t)(end - start)))
			mark_chunks(s, start, end - start);
	}
}

/* Mark the chunks of the --load file that hold data (its holes read as zeros); a file system
 * without SEEK_DATA answers that all of it is data, and so it is marked. */
static void mark_file_data(struct server *s, int fd, uint64_t size)
{
	off_t data = 0, hole;

	while ((uint64_t)data < size) {
		data = lseek(fd, data, SEEK_DATA);
		if (data < 0) {
			if (errno != ENXIO) /* no map: every chunk may hold data */
				mark_chunks(s, 0, size);
			return;
		}
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole > size)
			hole = (off_t)size;
		mark_chunks(s, (uint64_t)data, (uint64_t)(hole - data));
		data = hole;
	}
}

/* The image file mapped copy-on-write as the disk (MAP_PRIVATE: the file never changes, the
 * run's writes stay in the mapping), so a run's start reads nothing ahead: the pages the run
 * touches come from the page cache as it touches them.  A file of another size than the disk is
 * refused: it is another disk's image.  NULL on error (said). */
unsigned char *map_image(struct server *s, uint64_t size, const char *path)
{
	struct stat st;
	void *image = MAP_FAILED;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		corun_err(RD_PROG, "--load: %s: %s (expected a readable image file)", path,
			  strerror(errno));
	} else if ((uint64_t)st.st_size != size) {
		corun_err(RD_PROG, "--load: %s: %lld bytes (expected %llu, the --size)", path,
			  (long long)st.st_size, (unsigned long long)size);
	} else {
		image = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd,
			     0);
		if (image == MAP_FAILED)
			corun_err(RD_PROG, "--load: %s: cannot map it: %s", path, strerror(errno));
		else
			mark_file_data(s, fd, size);
	}
	if (fd >= 0)
		close(fd);
	return image == MAP_FAILED ? NULL : image;
}
