#include "flatjson.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define FJ_MAX_STR 1024

static const char *ws(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	return s;
}

/* Parses a string literal at S (at the opening quote) into OUT (non-ASCII
 * escapes become '?'); returns the position after the closing quote or NULL. */
static const char *string(const char *s, char *out, size_t cap)
{
	size_t n = 0;
	if (*s++ != '"')
		return NULL;
	while (*s && *s != '"') {
		char c = *s++;
		if ((unsigned char)c < 0x20)
			return NULL;
		if (c == '\\') {
			switch (*s++) {
			case '"': c = '"'; break;
			case '\\': c = '\\'; break;
			case '/': c = '/'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u':
				for (int k = 0; k < 4; k++)
					if (!isxdigit((unsigned char)*s++))
						return NULL;
				c = '?';
				break;
			default: return NULL;
			}
		}
		if (n + 1 < cap)
			out[n++] = c;
	}
	if (*s != '"')
		return NULL;
	out[n] = '\0';
	return s + 1;
}

/* Skips a nested array or object, honouring strings. */
static const char *nested(const char *s)
{
	int depth = 0;
	char scratch[FJ_MAX_STR];
	do {
		if (*s == '"') {
			s = string(s, scratch, sizeof scratch);
			if (!s)
				return NULL;
			continue;
		}
		if (*s == '[' || *s == '{')
			depth++;
		else if (*s == ']' || *s == '}')
			depth--;
		else if (*s == '\0')
			return NULL;
		s++;
	} while (depth > 0);
	return s;
}

int fj_parse(const char *line, fj_member_fn fn, void *ctx)
{
	char key[FJ_MAX_STR], str[FJ_MAX_STR];
	const char *s = ws(line);
	if (*s++ != '{')
		return -1;
	s = ws(s);
	if (*s == '}')
		return *ws(s + 1) ? -1 : 0;
	for (;;) {
		struct fj_value v = { .type = FJ_NULL, .str = NULL, .num = 0 };
		s = string(ws(s), key, sizeof key);
		if (!s)
			return -1;
		s = ws(s);
		if (*s++ != ':')
			return -1;
		s = ws(s);
		if (*s == '"') {
			s = string(s, str, sizeof str);
			if (!s)
				return -1;
			v.type = FJ_STRING;
			v.str = str;
		} else if (*s == '-' || isdigit((unsigned char)*s)) {
			char *end;
			v.type = FJ_NUMBER;
			v.num = strtod(s, &end);
			if (end == s)
				return -1;
			s = end;
		} else if (!strncmp(s, "true", 4) || !strncmp(s, "false", 5)) {
			v.type = FJ_BOOL;
			v.num = *s == 't';
			s += *s == 't' ? 4 : 5;
		} else if (!strncmp(s, "null", 4)) {
			s += 4;
		} else if (*s == '[' || *s == '{') {
			v.type = FJ_NESTED;
			s = nested(s);
			if (!s)
				return -1;
		} else {
			return -1;
		}
		fn(key, &v, ctx);
		s = ws(s);
		if (*s == ',') {
			s++;
			continue;
		}
		if (*s == '}')
			return *ws(s + 1) ? -1 : 0;
		return -1;
	}
}
