/* Replay mode: a trace through the model alone. */
#ifndef RD_REPLAY_H
#define RD_REPLAY_H

#include "options.h"

/* Returns an exit code. */
int rd_replay(const struct rd_config *c, int argc, char *argv[]);

#endif /* RD_REPLAY_H */
