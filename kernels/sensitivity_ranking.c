/* sensitivity_ranking: the Sensitivity_RANKING file-reading kernel
 * (paper section 3.3.2, Fig. 13).
 *
 * Reads a file exactly once, sequentially, in blocks of --block-size bytes,
 * spinning on --nops nop instructions after every read to set the I/O
 * bandwidth density.  The page cache is kept out either with O_DIRECT
 * (--cache-mode direct) or by evicting the file's pages before a buffered
 * read (--cache-mode evict).  Prints one JSON object on one line.
 */
#define _GNU_SOURCE /* O_DIRECT */

#include "corun_kernel.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#define PROG "sensitivity_ranking"
#define SENSITIVITY_RANKING_VERSION "1.0.0"

/* Buffer, offset and length alignment for O_DIRECT: a multiple of every
 * common logical block size (512 and 4096 bytes). */
#define DIRECT_ALIGN 4096
#define BLOCK_SIZE_MAX (INT64_C(1) << 30)

enum cache_mode { CACHE_DIRECT, CACHE_EVICT };

static const char *const cache_mode_names[] = {
	[CACHE_DIRECT] = "direct",
	[CACHE_EVICT] = "evict",
};

struct options {
	const char *file;
	int64_t block_size;
	const char *block_size_arg; /* as typed, for error messages */
	int64_t nops;
	enum cache_mode cache_mode;
};

/* clang-format off */
static const char usage_text[] =
	"Usage: " PROG " --file PATH [OPTION]...\n"
	"Read PATH once, sequentially, in blocks of --block-size bytes, running\n"
	"--nops nop instructions after each read, with the page cache kept out.\n"
	"Prints one JSON object on one line to stdout (Sensitivity_RANKING kernel).\n"
	"\n"
	"  --file PATH         regular file to read (required)\n"
	"  --block-size BYTES  bytes per read(), 1 to 1G; K/M/G = KiB/MiB/GiB\n"
	"                      (default 65536; a multiple of 4096 in direct mode)\n"
	"  --nops N            nop instructions after each read, >= 0 (default 5000)\n"
	"  --cache-mode MODE   how the page cache is avoided (default direct):\n"
	"                        direct  open with O_DIRECT, 4096-aligned buffer\n"
	"                        evict   fdatasync + POSIX_FADV_DONTNEED on the\n"
	"                                whole file, then buffered read()\n"
	CORUN_USAGE_TAIL("           ", "self-check") ",\n"
	"4 skipped (O_DIRECT not supported, or PATH on tmpfs/ramfs).\n";
/* clang-format on */

static void parse_options(int argc, char *argv[], struct options *o)
{
	static const struct option long_options[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "nops", required_argument, NULL, 'n' },
		{ "cache-mode", required_argument, NULL, 'm' },
		CORUN_COMMON_LONG_OPTIONS,
	};
	int c;

	*o = (struct options){
		.file = NULL,
		.block_size = 65536,
		.block_size_arg = "65536",
		.nops = 5000,
		.cache_mode = CACHE_DIRECT,
	};
	opterr = 0; /* report errors ourselves, in one line */
	/* '+': stop at the first non-option rather than permute argv, which is
	 * echoed as "cmdline"; ':': tell a missing value from a bad option. */
	while ((c = getopt_long(argc, argv, "+:h", long_options, NULL)) != -1) {
		switch (c) {
		case 'f': o->file = optarg; break;
		case 'b':
			o->block_size = corun_parse_int(PROG, "block-size", optarg, 1,
							BLOCK_SIZE_MAX, true);
			o->block_size_arg = optarg;
			break;
		case 'n':
			o->nops = corun_parse_int(PROG, "nops", optarg, 0, INT64_MAX, false);
			break;
		case 'm':
			o->cache_mode = (enum cache_mode)CORUN_PARSE_CHOICE(PROG, "cache-mode",
									    cache_mode_names);
			break;
		default:
			corun_default_option(PROG, SENSITIVITY_RANKING_VERSION, usage_text, c,
					     argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
	if (o->file == NULL)
		corun_usage_error(PROG, "--file PATH is required (see --help)");
	if (o->cache_mode == CACHE_DIRECT && o->block_size % DIRECT_ALIGN != 0)
		corun_usage_error(PROG,
				  "--block-size: '%s' (expected a "
				  "multiple of %d with --cache-mode direct)",
				  o->block_size_arg, DIRECT_ALIGN);
}

/* Whether the file in FD lives in memory only (tmpfs, ramfs): there both
 * cache modes would time memory copies, not device reads. */
static int on_memory_fs(const char *path, int fd, bool *on_memory)
{
	struct statfs sfs;

	if (fstatfs(fd, &sfs) != 0) {
		corun_err(PROG, "fstatfs '%s': %s", path, strerror(errno));
		return -1;
	}
	*on_memory = sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC;
	return 0;
}

/* Count the pages of the file in FD (SIZE bytes) resident in the page
 * cache, with mmap + mincore; mapping faults nothing in. */
static int count_resident_pages(const char *path, int fd, off_t size, int64_t *resident,
				int64_t *pages)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (size_t)size;
	size_t npages = (len + page - 1) / page;
	unsigned char *vec = NULL;
	void *map;
	int rc = -1;

	*pages = (int64_t)npages;
	*resident = 0;
	if (len == 0)
		return 0;
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		corun_err(PROG, "mmap '%s': %s", path, strerror(errno));
		return -1;
	}
	vec = malloc(npages);
	if (vec == NULL) {
		corun_err(PROG, "cannot allocate %zu bytes", npages);
		goto out_unmap;
	}
	if (mincore(map, len, vec) != 0) {
		corun_err(PROG, "mincore '%s': %s", path, strerror(errno));
		goto out_free;
	}
	for (size_t i = 0; i < npages; i++)
		*resident += vec[i] & 1;
	rc = 0;
out_free:
	free(vec);
out_unmap:
	munmap(map, len);
	return rc;
}

/* Write back, then drop, every cached page of the file in FD. */
static int evict_pages(const char *path, int fd)
{
	int err;

	if (fdatasync(fd) != 0) {
		corun_err(PROG, "fdatasync '%s': %s", path, strerror(errno));
		return -1;
	}
	err = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (err != 0) {
		corun_err(PROG, "posix_fadvise '%s': %s", path, strerror(err));
		return -1;
	}
	return 0;
}

struct result {
	off_t file_size;
	int64_t file_pages;
	int64_t resident_pages_at_start;
	int64_t bytes_read;
	int64_t reads;
	double elapsed_s;
};

static void print_result(const struct options *o, const struct result *r, int argc, char *argv[],
			 double start_epoch_s)
{
	struct corun_json j;

	corun_json_result_begin(&j, PROG, SENSITIVITY_RANKING_VERSION, argc, argv, start_epoch_s);
	corun_json_object_begin(&j, "params");
	corun_json_str(&j, "file", o->file);
	corun_json_int(&j, "block_size", o->block_size);
	corun_json_int(&j, "nops", o->nops);
	corun_json_str(&j, "cache_mode", cache_mode_names[o->cache_mode]);
	corun_json_object_end(&j);
	corun_json_int(&j, "file_size_bytes", (int64_t)r->file_size);
	corun_json_int(&j, "file_pages", r->file_pages);
	corun_json_int(&j, "bytes_read", r->bytes_read);
	corun_json_int(&j, "reads", r->reads);
	corun_json_double(&j, "elapsed_s", r->elapsed_s);
	/* MB = 10^6 bytes, as in the paper; null if too fast to time. */
	corun_json_double(&j, "bw_mb_s", (double)r->bytes_read / 1e6 / r->elapsed_s);
	corun_json_int(&j, "resident_pages_at_start", r->resident_pages_at_start);
	corun_json_result_end(&j);
}

static int run(const struct options *o, int argc, char *argv[], double start_epoch_s)
{
	bool direct = o->cache_mode == CACHE_DIRECT;
	size_t block_size = (size_t)o->block_size;
	struct result r = { 0 };
	bool on_memory;
	void *buf = NULL;
	struct stat st;
	double t0;
	int rc = CORUN_EXIT_RUNTIME;
	int fd;

	fd = open(o->file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		corun_err(PROG, "--file: cannot open '%s': %s", o->file, strerror(errno));
		return CORUN_EXIT_RUNTIME;
	}
	if (fstat(fd, &st) != 0) {
		corun_err(PROG, "fstat '%s': %s", o->file, strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		corun_err(PROG, "--file: '%s' is not a regular file", o->file);
		goto out_close;
	}
	if (on_memory_fs(o->file, fd, &on_memory) != 0)
		goto out_close;
	if (on_memory) {
		corun_err(PROG,
			  "skipped: %s is on tmpfs or ramfs, which has no "
			  "device to read from",
			  o->file);
		rc = CORUN_EXIT_SKIPPED;
		goto out_close;
	}
	/* Set after the checks above, so that EINVAL here can only mean the
	 * file system has no O_DIRECT (open() gives the same EINVAL). */
	if (direct && fcntl(fd, F_SETFL, O_DIRECT) != 0) {
		if (errno == EINVAL) {
			corun_err(PROG, "skipped: O_DIRECT not supported on %s", o->file);
			rc = CORUN_EXIT_SKIPPED;
		} else {
			corun_err(PROG, "fcntl O_DIRECT '%s': %s", o->file, strerror(errno));
		}
		goto out_close;
	}
	r.file_size = st.st_size;

	if (!direct && evict_pages(o->file, fd) != 0)
		goto out_close;
	if (count_resident_pages(o->file, fd, st.st_size, &r.resident_pages_at_start,
				 &r.file_pages) != 0)
		goto out_close;
	if (!direct && r.resident_pages_at_start != 0)
		corun_err(PROG,
			  "warning: %" PRId64 " of %" PRId64 " pages of "
			  "'%s' still cached after POSIX_FADV_DONTNEED (mapped "
			  "or locked by another process?)",
			  r.resident_pages_at_start, r.file_pages, o->file);

	if (direct) {
		int err = posix_memalign(&buf, DIRECT_ALIGN, block_size);

		if (err != 0)
			buf = NULL;
	} else {
		buf = malloc(block_size);
	}
	if (buf == NULL) {
		corun_err(PROG, "cannot allocate %zu bytes", block_size);
		goto out_close;
	}

	t0 = corun_monotonic_s();
	for (;;) {
		/* With O_DIRECT the last, partial block comes back short; the
		 * next read() returns 0 at end of file. */
		ssize_t n = read(fd, buf, block_size);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (direct && errno == EINVAL && r.bytes_read == 0) {
				/* Some file systems accept O_DIRECT at open()
				 * and refuse it at read(). */
				corun_err(PROG,
					  "skipped: O_DIRECT not supported "
					  "on %s",
					  o->file);
				rc = CORUN_EXIT_SKIPPED;
				goto out_free;
			}
			corun_err(PROG, "read '%s' at byte %" PRId64 ": %s", o->file, r.bytes_read,
				  strerror(errno));
			goto out_free;
		}
		if (n == 0)
			break;
		r.bytes_read += n;
		r.reads++;
		corun_spin_nops(o->nops);
	}
	r.elapsed_s = corun_monotonic_s() - t0;

	if (r.bytes_read != (int64_t)st.st_size) {
		corun_err(PROG,
			  "self-check failed: read %" PRId64 " bytes of "
			  "'%s' but fstat reported %" PRId64 " (file changed "
			  "while reading?)",
			  r.bytes_read, o->file, (int64_t)st.st_size);
		goto out_free;
	}

	print_result(o, &r, argc, argv, start_epoch_s);
	if (corun_flush_result(PROG) != 0)
		goto out_free;
	rc = CORUN_EXIT_OK;
out_free:
	free(buf);
out_close:
	close(fd);
	return rc;
}

CORUN_KERNEL_MAIN(parse_options, run)
