/* JSON output shared by the replay mode and the daemon's state file. */
#ifndef RD_REPORT_H
#define RD_REPORT_H

#include "corun_kernel.h"
#include "model.h"
#include "options.h"

/* "params": the model's inputs; "derived": the fitted seek curve, tracks,
 * revolution time, and the seek and rotation a random access costs. */
void rd_json_model(struct corun_json *j, const struct rd_config *c, const struct rd_model *m);

/* The acknowledgement time of a write-back write of LEN bytes. */
double rd_ack_ms(const struct rd_params *p, uint64_t len);

#endif /* RD_REPORT_H */
