/* The corun/aioli translator's files: status-file (tmp + rename), control-file (key=value
 * lines, re-read when its mtime changes) and the trace it reads or records (app_aware), all
 * called with the lock held. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xlator.h"

uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void json_str_or_null(FILE *f, const char *s)
{
	if (s && *s)
		aioli_json_string(f, s);
	else
		fputs("null", f);
}

void write_status(xlator_t *this, aioli_priv_t *priv)
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

void set_trace_record(xlator_t *this, aioli_priv_t *priv, const char *path)
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

void set_trace(aioli_priv_t *priv, const char *path)
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
void load_control(xlator_t *this, aioli_priv_t *priv)
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

void check_control(xlator_t *this, aioli_priv_t *priv)
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
