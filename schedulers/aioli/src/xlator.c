/* corun/aioli: the aIOLi request scheduler (paper 002) as a GlusterFS 10 server translator.
 *
 * readv and writev fops are handed to the scheduling core (policy.c); a scheduling thread
 * winds its decisions to the child, at most max-outstanding at a time. An aggregated decision
 * is one readv/writev of the whole contiguous range on a copied frame; when it returns, every
 * member fop is unwound with its own slice (reads: iovecs into the returned iobref at its
 * offset; writes: its own size), errors to every member. Policy fifo winds every fop at once.
 * Other fops pass through (the default fops). The same thread re-reads control-file when its
 * mtime changes (checked every 100 ms) and writes status-file (tmp + rename) every second, at
 * once after a control change, and at fini. docs/schedulers/aioli.md. */
#include <glusterfs/defaults.h>
#include <glusterfs/iobuf.h>
#include <glusterfs/logging.h>
#include <glusterfs/stack.h>
#include <glusterfs/xlator.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "policy.h"

/* The layout GlusterFS was built with: lock-free atomics (no mutex inside gf_atomic_t). */
_Static_assert(sizeof(gf_atomic_t) == sizeof(int64_t),
	       "gf_atomic_t: build with HAVE_ATOMIC_BUILTINS");

#define CONTROL_CHECK_NS 100000000ull
#define STATUS_EVERY_NS 1000000000ull
#define PATH_LEN 1024

struct member {
	struct aioli_req req;
	call_frame_t *frame;
	fd_t *fd;
	size_t size;
	off_t offset;
	uint32_t flags;
	dict_t *xdata;
	struct iovec *vec;     /* writes: a copy of the fop's vector */
	struct member *failed; /* the list of members whose dispatch could not be allocated */
	int count;
	struct iobref *iobref;
};

struct agg {
	int op;
	size_t n;
	off_t offset;
	size_t size;
	struct iovec *vec;
	struct iobref *iobref;
	struct member *m[];
};

typedef struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	int started, stop;
	struct aioli_core *core;
	struct aioli_params defaults;
	char control_file[PATH_LEN], status_file[PATH_LEN];
	char trace[PATH_LEN], trace_record[PATH_LEN], trace_default[PATH_LEN],
		trace_record_default[PATH_LEN];
	char generation[128], control_error[PATH_LEN + 512], trace_error[PATH_LEN + 512];
	struct timespec control_mtime;
	int control_seen;
	uint64_t control_loads, control_checked_ns, status_written_ns, t0_ns;
	FILE *trace_fp;
} aioli_priv_t;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- status, control and trace (called with the lock held) ------------------------------ */

static void json_str_or_null(FILE *f, const char *s)
{
	if (s && *s)
		aioli_json_string(f, s);
	else
		fputs("null", f);
}

static void write_status(xlator_t *this, aioli_priv_t *priv)
{
	char tmp[PATH_LEN + 32];
	struct timespec now;
	if (!priv->status_file[0])
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", priv->status_file, (int)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f) {
		gf_log(this->name, GF_LOG_WARNING, "status-file %s: %s", tmp, strerror(errno));
		return;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	fprintf(f, "{\"xlator\": ");
	aioli_json_string(f, this->name);
	fprintf(f, ", \"pid\": %d, \"updated_unix\": %.3f, \"control_file\": ", (int)getpid(),
		(double)now.tv_sec + (double)now.tv_nsec / 1e9);
	json_str_or_null(f, priv->control_file);
	fprintf(f, ", \"control_loads\": %llu, \"control_generation\": ",
		(unsigned long long)priv->control_loads);
	json_str_or_null(f, priv->generation);
	fprintf(f, ", \"control_error\": ");
	json_str_or_null(f, priv->control_error);
	fprintf(f, ", \"trace\": ");
	json_str_or_null(f, priv->trace);
	fprintf(f, ", \"trace_error\": ");
	json_str_or_null(f, priv->trace_error);
	fprintf(f, ", \"trace_record\": ");
	json_str_or_null(f, priv->trace_fp ? priv->trace_record : NULL);
	fprintf(f, ", ");
	aioli_write_json(priv->core, f);
	fprintf(f, "}\n");
	int bad = ferror(f);
	if (fclose(f) || bad || rename(tmp, priv->status_file)) {
		gf_log(this->name, GF_LOG_WARNING, "status-file %s: %s", priv->status_file,
		       strerror(errno));
		unlink(tmp);
	}
}

static void set_trace_record(xlator_t *this, aioli_priv_t *priv, const char *path)
{
	if (priv->trace_fp && strcmp(path, priv->trace_record) == 0)
		return;
	if (priv->trace_fp) {
		fclose(priv->trace_fp);
		priv->trace_fp = NULL;
	}
	snprintf(priv->trace_record, sizeof(priv->trace_record), "%s", path);
	if (!*path)
		return;
	priv->trace_fp = fopen(path, "w");
	if (!priv->trace_fp) {
		snprintf(priv->trace_error, sizeof(priv->trace_error), "trace_record %s: %s", path,
			 strerror(errno));
		gf_log(this->name, GF_LOG_WARNING, "%s", priv->trace_error);
		return;
	}
	priv->t0_ns = mono_ns();
	fprintf(priv->trace_fp, "# corun/aioli arrivals: t_us file(gfid) r|w offset size\n");
}

static void set_trace(aioli_priv_t *priv, const char *path)
{
	snprintf(priv->trace, sizeof(priv->trace), "%s", path);
	priv->trace_error[0] = 0;
	(void)aioli_load_trace(priv->core, path, priv->trace_error, sizeof(priv->trace_error));
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = 0;
	return s;
}

/* The control file: key=value lines on top of the volfile's options; all or nothing. */
static void load_control(xlator_t *this, aioli_priv_t *priv)
{
	FILE *f = fopen(priv->control_file, "r");
	if (!f) {
		snprintf(priv->control_error, sizeof(priv->control_error), "%s: %s",
			 priv->control_file, strerror(errno));
		return;
	}
	struct aioli_params p = priv->defaults;
	char line[PATH_LEN + 64], gen[sizeof(priv->generation)] = "";
	char trace[PATH_LEN], record[PATH_LEN];
	int reset = 0, lineno = 0;
	snprintf(trace, sizeof(trace), "%s", priv->trace_default);
	snprintf(record, sizeof(record), "%s", priv->trace_record_default);
	priv->control_error[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		char *s = trim(line);
		if (!*s || *s == '#')
			continue;
		char *eq = strchr(s, '=');
		if (!eq) {
			snprintf(priv->control_error, sizeof(priv->control_error),
				 "line %d: %.100s (expected key=value)", lineno, s);
			break;
		}
		*eq = 0;
		char *k = trim(s), *v = trim(eq + 1);
		if (!strcmp(k, "reset"))
			reset = strcmp(v, "0") != 0;
		else if (!strcmp(k, "generation"))
			snprintf(gen, sizeof(gen), "%s", v);
		else if (!strcmp(k, "trace"))
			snprintf(trace, sizeof(trace), "%s", v);
		else if (!strcmp(k, "trace_record") || !strcmp(k, "trace-record"))
			snprintf(record, sizeof(record), "%s", v);
		else {
			int rc = aioli_params_set(&p, k, v);
			if (rc) {
				snprintf(priv->control_error, sizeof(priv->control_error),
					 "line %d: %.100s: %.100s (%s)", lineno, k, v,
					 rc == -1 ? "unknown key" : "bad value");
				break;
			}
		}
	}
	fclose(f);
	if (priv->control_error[0]) {
		gf_log(this->name, GF_LOG_WARNING, "control-file %s: %s", priv->control_file,
		       priv->control_error);
		return;
	}
	aioli_set_params(priv->core, &p);
	if (strcmp(trace, priv->trace) || priv->trace_error[0])
		set_trace(priv, trace);
	set_trace_record(this, priv, record);
	if (reset)
		aioli_reset(priv->core);
	snprintf(priv->generation, sizeof(priv->generation), "%s", gen);
	priv->control_loads++;
	gf_log(this->name, GF_LOG_INFO, "control-file %s: policy %s%s", priv->control_file,
	       aioli_policy_name(p.policy), reset ? ", counters reset" : "");
}

static void check_control(xlator_t *this, aioli_priv_t *priv)
{
	struct stat st;
	if (!priv->control_file[0])
		return;
	if (stat(priv->control_file, &st)) {
		if (priv->control_seen) { /* removed: back to the volfile's options */
			priv->control_seen = 0;
			aioli_set_params(priv->core, &priv->defaults);
			priv->generation[0] = 0;
			priv->status_written_ns = 0; /* the status says so at once */
		}
		return;
	}
	if (priv->control_seen && st.st_mtim.tv_sec == priv->control_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == priv->control_mtime.tv_nsec)
		return;
	priv->control_seen = 1;
	priv->control_mtime = st.st_mtim;
	load_control(this, priv);
	priv->status_written_ns = 0; /* applied (or refused): the status says so at once */
}

/* ---- winding and unwinding ---------------------------------------------------------------- */

static void member_free(struct member *m)
{
	if (m->fd)
		fd_unref(m->fd);
	if (m->xdata)
		dict_unref(m->xdata);
	if (m->iobref)
		iobref_unref(m->iobref);
	free(m->vec);
	free(m);
}

static void finish(xlator_t *this, struct agg *a)
{
	aioli_priv_t *priv = this->private;
	for (size_t i = 0; i < a->n; i++)
		member_free(a->m[i]);
	free(a->vec);
	if (a->iobref)
		iobref_unref(a->iobref);
	free(a);
	pthread_mutex_lock(&priv->lock);
	aioli_complete(priv->core);
	pthread_cond_signal(&priv->cond);
	pthread_mutex_unlock(&priv->lock);
}

static int32_t aioli_agg_readv_cbk(call_frame_t *frame, void *cookie, xlator_t *this,
				   int32_t op_ret, int32_t op_errno, struct iovec *vector,
				   int32_t count, struct iatt *stbuf, struct iobref *iobref,
				   dict_t *xdata)
{
	struct agg *a = cookie;
	struct iovec *slice = calloc((size_t)(count > 0 ? count : 1), sizeof(*slice));
	for (size_t i = 0; i < a->n; i++) {
		struct member *m = a->m[i];
		if (op_ret < 0 || !slice) {
			STACK_UNWIND_STRICT(readv, m->frame, -1, slice ? op_errno : ENOMEM, NULL, 0,
					    NULL, NULL, NULL);
			continue;
		}
		size_t rel = (size_t)(m->offset - a->offset), got = (size_t)op_ret;
		size_t want = got > rel ? got - rel : 0;
		if (want > m->size)
			want = m->size;
		int n = 0;
		size_t skip = rel, left = want;
		for (int v = 0; v < count && left; v++) {
			size_t len = vector[v].iov_len;
			if (skip >= len) {
				skip -= len;
				continue;
			}
			size_t take = len - skip < left ? len - skip : left;
			slice[n].iov_base = (char *)vector[v].iov_base + skip;
			slice[n].iov_len = take;
			n++;
			left -= take;
			skip = 0;
		}
		STACK_UNWIND_STRICT(readv, m->frame, (int32_t)want, op_errno, slice, n, stbuf,
				    iobref, xdata);
	}
	free(slice);
	STACK_DESTROY(frame->root);
	finish(this, a);
	return 0;
}

static int32_t aioli_agg_writev_cbk(call_frame_t *frame, void *cookie, xlator_t *this,
				    int32_t op_ret, int32_t op_errno, struct iatt *prebuf,
				    struct iatt *postbuf, dict_t *xdata)
{
	struct agg *a = cookie;
	for (size_t i = 0; i < a->n; i++) {
		struct member *m = a->m[i];
		if (op_ret < 0) {
			STACK_UNWIND_STRICT(writev, m->frame, -1, op_errno, NULL, NULL, NULL);
			continue;
		}
		size_t rel = (size_t)(m->offset - a->offset), got = (size_t)op_ret;
		size_t done = got > rel ? got - rel : 0;
		if (done > m->size)
			done = m->size;
		STACK_UNWIND_STRICT(writev, m->frame, (int32_t)done, op_errno, prebuf, postbuf,
				    xdata);
	}
	STACK_DESTROY(frame->root);
	finish(this, a);
	return 0;
}

static void fail_agg(xlator_t *this, struct agg *a, int err)
{
	for (size_t i = 0; i < a->n; i++) {
		if (a->op == AIOLI_READ)
			STACK_UNWIND_STRICT(readv, a->m[i]->frame, -1, err, NULL, 0, NULL, NULL,
					    NULL);
		else
			STACK_UNWIND_STRICT(writev, a->m[i]->frame, -1, err, NULL, NULL, NULL);
	}
	finish(this, a);
}

static void wind(xlator_t *this, struct agg *a)
{
	struct member *m0 = a->m[0];
	call_frame_t *frame = copy_frame(m0->frame);
	if (!frame) {
		fail_agg(this, a, ENOMEM);
		return;
	}
	if (a->op == AIOLI_READ) {
		STACK_WIND_COOKIE(frame, aioli_agg_readv_cbk, a, FIRST_CHILD(this),
				  FIRST_CHILD(this)->fops->readv, m0->fd, a->size, a->offset,
				  m0->flags, m0->xdata);
		return;
	}
	int count = 0;
	for (size_t i = 0; i < a->n; i++)
		count += a->m[i]->count;
	a->vec = calloc((size_t)count, sizeof(*a->vec));
	a->iobref = iobref_new();
	if (!a->vec || !a->iobref) {
		STACK_DESTROY(frame->root);
		fail_agg(this, a, ENOMEM);
		return;
	}
	int k = 0;
	for (size_t i = 0; i < a->n; i++) {
		memcpy(a->vec + k, a->m[i]->vec, (size_t)a->m[i]->count * sizeof(*a->vec));
		k += a->m[i]->count;
		if (a->m[i]->iobref)
			iobref_merge(a->iobref, a->m[i]->iobref);
	}
	STACK_WIND_COOKIE(frame, aioli_agg_writev_cbk, a, FIRST_CHILD(this),
			  FIRST_CHILD(this)->fops->writev, m0->fd, a->vec, count, a->offset,
			  m0->flags, a->iobref, m0->xdata);
}

static void *scheduler_thread(void *arg)
{
	xlator_t *this = arg;
	aioli_priv_t *priv = this->private;
	THIS = this;
	struct agg **batch = NULL;
	size_t nbatch = 0, capbatch = 0;
	pthread_mutex_lock(&priv->lock);
	while (!priv->stop) {
		uint64_t now = mono_ns(), wake = 0;
		if (now - priv->control_checked_ns >= CONTROL_CHECK_NS) {
			priv->control_checked_ns = now;
			check_control(this, priv);
		}
		if (now - priv->status_written_ns >= STATUS_EVERY_NS) {
			priv->status_written_ns = now;
			write_status(this, priv);
			if (priv->trace_fp)
				fflush(priv->trace_fp);
		}
		struct aioli_dispatch d;
		struct member *failed = NULL;
		nbatch = 0;
		while (aioli_next(priv->core, now, &d, &wake)) {
			struct agg *a = malloc(sizeof(*a) + d.n * sizeof(a->m[0]));
			if (nbatch == capbatch) {
				struct agg **nb =
					realloc(batch, (capbatch = capbatch ? 2 * capbatch : 8) *
							       sizeof(*batch));
				if (nb)
					batch = nb;
			}
			if (!a || nbatch >= capbatch) {
				/* no memory: the members left the core; they fail with ENOMEM */
				free(a);
				for (size_t i = 0; i < d.n; i++) {
					struct member *m = d.reqs[i]->cookie;
					m->failed = failed;
					failed = m;
				}
				aioli_complete(priv->core);
				continue;
			}
			a->op = d.op;
			a->n = d.n;
			a->offset = (off_t)d.offset;
			a->size = d.size;
			a->vec = NULL;
			a->iobref = NULL;
			for (size_t i = 0; i < d.n; i++)
				a->m[i] = d.reqs[i]->cookie;
			batch[nbatch++] = a;
		}
		if (nbatch || failed) {
			pthread_mutex_unlock(&priv->lock);
			if (failed)
				gf_log(this->name, GF_LOG_ERROR, "out of memory for a dispatch");
			while (failed) {
				struct member *m = failed;
				failed = m->failed;
				if (m->req.op == AIOLI_READ)
					STACK_UNWIND_STRICT(readv, m->frame, -1, ENOMEM, NULL, 0,
							    NULL, NULL, NULL);
				else
					STACK_UNWIND_STRICT(writev, m->frame, -1, ENOMEM, NULL,
							    NULL, NULL);
				member_free(m);
			}
			for (size_t i = 0; i < nbatch; i++)
				wind(this, batch[i]);
			pthread_mutex_lock(&priv->lock);
			continue;
		}
		uint64_t until = priv->control_checked_ns + CONTROL_CHECK_NS;
		if (priv->status_written_ns + STATUS_EVERY_NS < until)
			until = priv->status_written_ns + STATUS_EVERY_NS;
		if (wake && wake < until)
			until = wake;
		struct timespec ts = { (time_t)(until / 1000000000ull),
				       (long)(until % 1000000000ull) };
		pthread_cond_timedwait(&priv->cond, &priv->lock, &ts);
	}
	write_status(this, priv);
	pthread_mutex_unlock(&priv->lock);
	free(batch);
	return NULL;
}

/* ---- fops --------------------------------------------------------------------------------- */

static uint64_t file_of(fd_t *fd, char *token, size_t len)
{
	uuid_utoa_r(fd->inode->gfid, token);
	(void)len;
	return aioli_file_id(token);
}

/* Queues m; 1 if the policy is fifo and the caller must wind the fop itself. */
static int enqueue(xlator_t *this, struct member *m, enum aioli_op op)
{
	aioli_priv_t *priv = this->private;
	char token[64];
	m->req.file = file_of(m->fd, token, sizeof(token));
	m->req.offset = (uint64_t)m->offset;
	m->req.size = m->size;
	m->req.op = op;
	m->req.cookie = m;
	uint64_t now = mono_ns();
	pthread_mutex_lock(&priv->lock);
	if (priv->trace_fp)
		fprintf(priv->trace_fp, "%.3f %s %c %lld %zu\n", (double)(now - priv->t0_ns) / 1e3,
			token, op == AIOLI_WRITE ? 'w' : 'r', (long long)m->offset, m->size);
	int pass = aioli_submit(priv->core, &m->req, now);
	if (!pass)
		pthread_cond_signal(&priv->cond);
	pthread_mutex_unlock(&priv->lock);
	return pass;
}

static int32_t aioli_readv(call_frame_t *frame, xlator_t *this, fd_t *fd, size_t size, off_t offset,
			   uint32_t flags, dict_t *xdata)
{
	struct member *m = calloc(1, sizeof(*m));
	if (!m || size == 0) {
		free(m);
		STACK_WIND_TAIL(frame, FIRST_CHILD(this), FIRST_CHILD(this)->fops->readv, fd, size,
				offset, flags, xdata);
		return 0;
	}
	*m = (struct member){ .frame = frame,
			      .fd = fd_ref(fd),
			      .size = size,
			      .offset = offset,
			      .flags = flags,
			      .xdata = xdata ? dict_ref(xdata) : NULL };
	if (enqueue(this, m, AIOLI_READ)) {
		member_free(m);
		STACK_WIND_TAIL(frame, FIRST_CHILD(this), FIRST_CHILD(this)->fops->readv, fd, size,
				offset, flags, xdata);
	}
	return 0;
}

static int32_t aioli_writev(call_frame_t *frame, xlator_t *this, fd_t *fd, struct iovec *vector,
			    int32_t count, off_t offset, uint32_t flags, struct iobref *iobref,
			    dict_t *xdata)
{
	size_t size = 0;
	for (int i = 0; i < count; i++)
		size += vector[i].iov_len;
	struct member *m = size && count > 0 ? calloc(1, sizeof(*m)) : NULL;
	struct iovec *vec = m ? malloc((size_t)count * sizeof(*vec)) : NULL;
	if (!vec) {
		free(m);
		STACK_WIND_TAIL(frame, FIRST_CHILD(this), FIRST_CHILD(this)->fops->writev, fd,
				vector, count, offset, flags, iobref, xdata);
		return 0;
	}
	memcpy(vec, vector, (size_t)count * sizeof(*vec));
	*m = (struct member){ .frame = frame,
			      .fd = fd_ref(fd),
			      .size = size,
			      .offset = offset,
			      .flags = flags,
			      .xdata = xdata ? dict_ref(xdata) : NULL,
			      .vec = vec,
			      .count = count,
			      .iobref = iobref ? iobref_ref(iobref) : NULL };
	if (enqueue(this, m, AIOLI_WRITE)) {
		member_free(m);
		STACK_WIND_TAIL(frame, FIRST_CHILD(this), FIRST_CHILD(this)->fops->writev, fd,
				vector, count, offset, flags, iobref, xdata);
	}
	return 0;
}

/* ---- init and fini --------------------------------------------------------------------------- */

static const char *const param_keys[] = {
	"policy",          "quantum-step-kib", "max-agg-kib",
	"wait-us",         "shift-window-kib", "starvation-ms",
	"max-outstanding", "app-req-cost-us",  "app-wait-max-us"
};

static int32_t aioli_init(xlator_t *this)
{
	if (!this->children || this->children->next) {
		gf_log(this->name, GF_LOG_ERROR, "corun/aioli needs exactly one child");
		return -1;
	}
	aioli_priv_t *priv = calloc(1, sizeof(*priv));
	if (!priv)
		return -1;
	aioli_params_default(&priv->defaults);
	for (size_t i = 0; i < sizeof(param_keys) / sizeof(param_keys[0]); i++) {
		char *v = NULL;
		if (dict_get_str(this->options, (char *)param_keys[i], &v) == 0 && v &&
		    aioli_params_set(&priv->defaults, param_keys[i], v)) {
			gf_log(this->name, GF_LOG_ERROR,
			       "option %s: %s (see docs/schedulers/aioli.md)", param_keys[i], v);
			free(priv);
			return -1;
		}
	}
	struct {
		const char *key;
		char *dst;
	} paths[] = { { "control-file", priv->control_file },
		      { "status-file", priv->status_file },
		      { "trace", priv->trace_default },
		      { "trace-record", priv->trace_record_default } };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char *v = NULL;
		if (dict_get_str(this->options, (char *)paths[i].key, &v) == 0 && v)
			snprintf(paths[i].dst, PATH_LEN, "%s", v);
	}
	priv->core = aioli_new(&priv->defaults);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&priv->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&priv->lock, NULL);
	this->private = priv;
	if (!priv->core) {
		free(priv);
		this->private = NULL;
		return -1;
	}
	if (priv->trace_default[0])
		set_trace(priv, priv->trace_default);
	if (priv->trace_record_default[0])
		set_trace_record(this, priv, priv->trace_record_default);
	if (pthread_create(&priv->thread, NULL, scheduler_thread, this)) {
		gf_log(this->name, GF_LOG_ERROR, "cannot start the scheduling thread");
		aioli_free(priv->core);
		free(priv);
		this->private = NULL;
		return -1;
	}
	priv->started = 1;
	gf_log(this->name, GF_LOG_INFO, "corun/aioli: policy %s, control-file %s, status-file %s",
	       aioli_policy_name(priv->defaults.policy),
	       priv->control_file[0] ? priv->control_file : "-",
	       priv->status_file[0] ? priv->status_file : "-");
	return 0;
}

static void aioli_fini(xlator_t *this)
{
	aioli_priv_t *priv = this->private;
	if (!priv)
		return;
	pthread_mutex_lock(&priv->lock);
	priv->stop = 1;
	pthread_cond_signal(&priv->cond);
	pthread_mutex_unlock(&priv->lock);
	if (priv->started)
		pthread_join(priv->thread, NULL);
	if (priv->trace_fp)
		fclose(priv->trace_fp);
	/* requests still queued belong to frames the server is tearing down; they are not freed */
	aioli_free(priv->core);
	this->private = NULL;
	free(priv);
}

static struct xlator_fops aioli_fops = {
	.readv = aioli_readv,
	.writev = aioli_writev,
};

static struct xlator_cbks aioli_cbks = { 0 };

static struct volume_options aioli_options[] = {
	{ .key = { "policy" },
	  .type = GF_OPTION_TYPE_STR,
	  .default_value = "fifo",
	  .description = "fifo aioli aioli_no_wait aioli_no_agg time_order_agg app_aware" },
	{ .key = { "quantum-step-kib" },
	  .type = GF_OPTION_TYPE_STR,
	  .default_value = "32",
	  .description = "quantum added to every queued request per scheduling step (KiB)" },
	{ .key = { "max-agg-kib" },
	  .type = GF_OPTION_TYPE_STR,
	  .default_value = "1024",
	  .description = "largest aggregated request (KiB)" },
	{ .key = { "wait-us" },
	  .type = GF_OPTION_TYPE_STR,
	  .default_value = "500",
	  .description = "longest wait for a larger aggregation (us)" },
	{ .key = { "shift-window-kib" },
	  .type = GF_OPTION_TYPE_STR,
	  .default_value = "256",
	  .description =
		  "a gap up to this far ahead of the queue's last dispatch is a shift (KiB)" },
	{ .key = { "starvation-ms" },
	  .type = GF_OPTION_TYPE_STR,
	  .default_value = "100",
	  .description = "a request queued this long goes next, without a wait (ms)" },
	{ .key = { "max-outstanding" },
	  .type = GF_OPTION_TYPE_STR,
	  .default_value = "1",
	  .description = "dispatched requests in flight to the child" },
	{ .key = { "app-req-cost-us" },
	  .type = GF_OPTION_TYPE_STR,
	  .default_value = "1000",
	  .description = "app_aware: benchmarked time one more request costs (us)" },
	{ .key = { "app-wait-max-us" },
	  .type = GF_OPTION_TYPE_STR,
	  .default_value = "2000",
	  .description = "app_aware: longest predicted wait (us)" },
	{ .key = { "control-file" },
	  .type = GF_OPTION_TYPE_STR,
	  .description = "key=value lines, re-read on change" },
	{ .key = { "status-file" },
	  .type = GF_OPTION_TYPE_STR,
	  .description = "JSON status, rewritten every second" },
	{ .key = { "trace" },
	  .type = GF_OPTION_TYPE_STR,
	  .description = "app_aware: the trace of an earlier run" },
	{ .key = { "trace-record" },
	  .type = GF_OPTION_TYPE_STR,
	  .description = "write the arrivals to this file" },
	{ .key = { NULL } },
};

xlator_api_t xlator_api = {
	.init = aioli_init,
	.fini = aioli_fini,
	.fops = &aioli_fops,
	.cbks = &aioli_cbks,
	.options = aioli_options,
	.identifier = "aioli",
	.category = GF_TECH_PREVIEW,
};
