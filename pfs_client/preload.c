/* libcorun_pfs.so: serves a program's POSIX file calls on one path prefix
 * through corun's striped gfapi client (stripe.c), as OrangeFS's usrint
 * library serves them on a PVFS2 volume: a user-level library striping the
 * file over the data servers, in the application's process.  Everything else
 * passes through to the C library.  Load it with LD_PRELOAD; it is made for
 * IOR's POSIX backend (ior -a POSIX -o PREFIX/FILE) and serves what that
 * calls, and a little more.
 *
 * Environment (read once, at the first call on the prefix):
 *   CORUN_PFS_PREFIX      absolute path prefix served (unset: the library
 *                         does nothing)
 *   CORUN_PFS_VOLFILES    client volfiles of the data servers, in stripe
 *                         order, separated by ':' (required)
 *   CORUN_PFS_STRIP_SIZE  strip size in bytes, K/M suffix (default 64K)
 *   CORUN_PFS_DIRECT      1: open the datafiles with O_DIRECT (for bricks
 *                         with o-direct; default 0)
 *   CORUN_PFS_LOG         gfapi's log file (default /dev/null)
 *
 * Served on PREFIX and the names under it: open, open64, creat, openat
 * (absolute paths), close, read, write, pread, pwrite, lseek, fsync,
 * fdatasync, fstat, stat, lstat, ftruncate, truncate, access, unlink, mkdir,
 * rmdir, rename, statvfs, and their 64-bit names.  An open file is a
 * placeholder descriptor (O_PATH on /dev/null, so a call this library does
 * not serve fails with EBADF rather than touching another file) and the
 * striped file behind it.  Not served: dup, mmap, directory listings,
 * O_APPEND (EOPNOTSUPP), relative paths.
 *
 * The servers are reached once per process: at MPI_Init (so that a rank's
 * first open, which IOR times, does not pay for it) or else at the first
 * call on the prefix; again in a child after fork.  A wrong setting is one
 * line on stderr, "corun_pfs: NAME: value (expected ...)", and every call on
 * the prefix then fails with EINVAL; an unreachable server fails them with
 * EIO.  64-bit Linux only (off_t and struct stat are the 64-bit ones).
 */
#define _GNU_SOURCE

#include "preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define PREFIX_MAX 1024

_Static_assert(sizeof(off_t) == 8, "64-bit off_t only");
_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "struct stat is stat64");

static struct {
	pthread_once_t once;
	pthread_mutex_t lock;
	char prefix[PREFIX_MAX];
	size_t prefix_len;
	struct pfs_conf conf;
	char *volfile_buf;
	char error[512]; /* a wrong setting: every call on the prefix fails */
	struct pfs_fs *fs;
	pid_t fs_pid;
	bool reported;
} g = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

static struct handle *handles[FD_MAX];

/* ---- the C library's own functions ------------------------------------- */

REAL(open);
REAL(openat);
REAL(close);
/* MPI's, declared here: the library is built without MPI. */
static int (*real_mpi_init)(int *, char ***);
static int (*real_mpi_init_thread)(int *, char ***, int, int *);
int MPI_Init(int *argc, char ***argv);
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);

void *libc_next(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	if (!p) {
		static const char msg[] = "corun_pfs: a C library function is missing\n";
		ssize_t ignored = write(2, msg, sizeof msg - 1);
		(void)ignored;
		abort();
	}
	return p;
}

/* ---- settings and the connection --------------------------------------- */

static void set_error(const char *fmt, const char *name, const char *value, const char *expected)
{
	snprintf(g.error, sizeof g.error, fmt, name, value ? value : "", expected);
}

static int64_t parse_size(const char *s)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || v <= 0)
		return -1;
	int64_t mul = 1;
	if (*end == 'K' || *end == 'k')
		mul = 1024, end++;
	else if (*end == 'M' || *end == 'm')
		mul = 1024 * 1024, end++;
	if (*end || v > (INT64_C(1) << 30) / mul)
		return -1;
	return (int64_t)v * mul;
}

static void read_settings(void)
{
	const char *fmt = "corun_pfs: %s: '%s' (expected %s)";
	const char *prefix = getenv("CORUN_PFS_PREFIX");
	if (!prefix || !*prefix)
		return; /* not active */
	size_t len = strlen(prefix);
	while (len > 1 && prefix[len - 1] == '/')
		len--;
	if (prefix[0] != '/' || len >= sizeof g.prefix || len < 2) {
		set_error(fmt, "CORUN_PFS_PREFIX", prefix, "an absolute path such as /corun-pfs");
		g.prefix_len = strlen(prefix) < sizeof g.prefix ? strlen(prefix) : 0;
		memcpy(g.prefix, prefix, g.prefix_len);
		return;
	}
	memcpy(g.prefix, prefix, len);
	g.prefix_len = len;
	const char *vols = getenv("CORUN_PFS_VOLFILES");
	g.volfile_buf = vols ? strdup(vols) : NULL;
	if (g.volfile_buf) {
		for (char *save = NULL, *v = strtok_r(g.volfile_buf, ":", &save); v;
		     v = strtok_r(NULL, ":", &save)) {
			if (g.conf.n_servers == PFS_SERVERS_MAX) {
				g.conf.n_servers = 0;
				break;
			}
			g.conf.volfiles[g.conf.n_servers++] = v;
		}
	}
	if (g.conf.n_servers == 0) {
		set_error(fmt, "CORUN_PFS_VOLFILES", vols,
			  "1 to 64 client volfiles of the data servers, in stripe order, "
			  "separated by ':'");
		return;
	}
	const char *strip = getenv("CORUN_PFS_STRIP_SIZE");
	g.conf.strip = strip ? parse_size(strip) : 65536;
	if (g.conf.strip < 8) {
		set_error(fmt, "CORUN_PFS_STRIP_SIZE", strip,
			  "a size of 8 bytes to 1G, such as 64K");
		return;
	}
	const char *direct = getenv("CORUN_PFS_DIRECT");
	if (direct && strcmp(direct, "0") != 0 && strcmp(direct, "1") != 0) {
		set_error(fmt, "CORUN_PFS_DIRECT", direct, "0 or 1");
		return;
	}
	g.conf.direct = direct && strcmp(direct, "1") == 0;
	const char *log = getenv("CORUN_PFS_LOG");
	g.conf.log = log && *log ? log : "/dev/null";
}

static void report_once(void)
{
	if (g.reported)
		return;
	g.reported = true;
	fprintf(stderr, "%s\n", g.error);
}

/* The connection of this process, made on first use; NULL with errno set
 * (EINVAL: a wrong setting, EIO: a server out of reach). */
struct pfs_fs *connection(void)
{
	pthread_once(&g.once, read_settings);
	pthread_mutex_lock(&g.lock);
	if (g.error[0]) {
		report_once();
		pthread_mutex_unlock(&g.lock);
		errno = EINVAL;
		return NULL;
	}
	pid_t me = getpid();
	if (!g.fs || g.fs_pid != me) { /* first use, or a child after fork */
		char err[400];
		g.fs = pfs_connect(&g.conf, err, sizeof err);
		g.fs_pid = me;
		if (!g.fs) {
			snprintf(g.error, sizeof g.error, "corun_pfs: %s", err);
			report_once();
			pthread_mutex_unlock(&g.lock);
			errno = EIO;
			return NULL;
		}
	}
	struct pfs_fs *fs = g.fs;
	pthread_mutex_unlock(&g.lock);
	return fs;
}

/* The name inside the file system of PATH, or NULL when PATH is not on the
 * prefix. */
const char *inner(const char *path, char *buf)
{
	pthread_once(&g.once, read_settings);
	if (!g.prefix_len || !path || strncmp(path, g.prefix, g.prefix_len) != 0)
		return NULL;
	const char *rest = path + g.prefix_len;
	if (*rest != '\0' && *rest != '/')
		return NULL;
	if (strlen(rest) >= NAME_MAX_LEN)
		return NULL;
	snprintf(buf, NAME_MAX_LEN, "%s", *rest ? rest : "/");
	return buf;
}

struct handle *handle_of(int fd)
{
	if (fd < 0 || fd >= FD_MAX)
		return NULL;
	return __atomic_load_n(&handles[fd], __ATOMIC_ACQUIRE);
}

/* ---- open and close ---------------------------------------------------- */

static int serve_open(const char *name, int flags, mode_t mode)
{
	struct pfs_fs *fs = connection();
	if (!fs)
		return -1;
	if (strcmp(name, "/") == 0 || (flags & O_DIRECTORY)) {
		errno = EISDIR;
		return -1;
	}
	struct handle *h = calloc(1, sizeof *h);
	if (!h) {
		errno = ENOMEM;
		return -1;
	}
	h->file = pfs_open(fs, name, flags, mode);
	if (!h->file) {
		int err = errno;
		free(h);
		errno = err;
		return -1;
	}
	pthread_mutex_init(&h->lock, NULL);
	int fd = RESOLVE(real_open, "open")("/dev/null", O_PATH | O_CLOEXEC);
	if (fd < 0 || fd >= FD_MAX) {
		int err = fd < 0 ? errno : EMFILE;
		if (fd >= 0)
			RESOLVE(real_close, "close")(fd);
		pfs_close(h->file);
		free(h);
		errno = err;
		return -1;
	}
	__atomic_store_n(&handles[fd], h, __ATOMIC_RELEASE);
	return fd;
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	char buf[NAME_MAX_LEN];
	const char *name = inner(path, buf);
	if (name)
		return serve_open(name, flags, mode);
	return RESOLVE(real_open, "open")(path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	return open(path, flags, mode);
}

EXPORT int __open_2(const char *path, int flags)
{
	return open(path, flags);
}

EXPORT int __open64_2(const char *path, int flags)
{
	return open(path, flags);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	char buf[NAME_MAX_LEN];
	const char *name = inner(path, buf); /* a relative path is never on the prefix */
	if (name)
		return serve_open(name, flags, mode);
	return RESOLVE(real_openat, "openat")(dirfd, path, flags, mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = mode_arg(flags, ap);
	va_end(ap);
	return openat(dirfd, path, flags, mode);
}

EXPORT int creat(const char *path, mode_t mode)
{
	return open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

EXPORT int creat64(const char *path, mode_t mode)
{
	return open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

EXPORT int close(int fd)
{
	struct handle *h = handle_of(fd);
	if (!h)
		return RESOLVE(real_close, "close")(fd);
	__atomic_store_n(&handles[fd], NULL, __ATOMIC_RELEASE);
	int rc = pfs_close(h->file), err = errno;
	pthread_mutex_destroy(&h->lock);
	free(h);
	RESOLVE(real_close, "close")(fd);
	errno = err;
	return rc;
}

/* ---- MPI: connect while the ranks start, before any timed call --------- */

static void connect_early(void)
{
	pthread_once(&g.once, read_settings);
	if (g.prefix_len)
		connection(); /* a failure is reported, and each call on the prefix fails */
}

EXPORT int MPI_Init(int *argc, char ***argv)
{
	int rc = RESOLVE(real_mpi_init, "MPI_Init")(argc, argv);
	connect_early();
	return rc;
}

EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int rc = RESOLVE(real_mpi_init_thread, "MPI_Init_thread")(argc, argv, required, provided);
	connect_early();
	return rc;
}
