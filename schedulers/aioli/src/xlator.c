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
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "xlator.h"

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
