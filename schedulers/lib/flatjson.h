/* A reader for one flat JSON object on one line, as the runner writes its job
 * events: top-level string, number, boolean and null members are reported;
 * nested arrays and objects are skipped. */
#ifndef SD_FLATJSON_H
#define SD_FLATJSON_H

#include <stdbool.h>
#include <stddef.h>

enum fj_type { FJ_STRING, FJ_NUMBER, FJ_BOOL, FJ_NULL, FJ_NESTED };

struct fj_value {
	enum fj_type type;
	const char *str; /* FJ_STRING: unescaped, NUL-terminated (in scratch space) */
	double num;      /* FJ_NUMBER; FJ_BOOL: 1 or 0 */
};

typedef void (*fj_member_fn)(const char *key, const struct fj_value *v, void *ctx);

/* Calls FN for every member of the object in LINE. Returns 0, or -1 if LINE
 * is not one well-formed JSON object (FN may have been called for a prefix). */
int fj_parse(const char *line, fj_member_fn fn, void *ctx);

#endif /* SD_FLATJSON_H */
