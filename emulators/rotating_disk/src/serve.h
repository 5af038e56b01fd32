/* The FUSE front end: serves the image and times every request by the model. */
#ifndef RD_SERVE_H
#define RD_SERVE_H

#include "options.h"

/* Mount, serve until unmounted or signalled, tear down.  Returns an exit
 * code: 0 ok, 1 runtime error, 4 FUSE missing. */
int rd_serve(const struct rd_config *c, int argc, char *argv[]);

#endif /* RD_SERVE_H */
