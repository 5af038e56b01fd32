/* The contention-aware (CC) choice of paper 001, section 4.2, as a pure
 * module: no I/O, no clocks, no signals. The daemon and the --decide-table
 * test mode both call it.
 *
 *   eq. 1  ERL = ED * ENP + (ceil(ENP) + 1) * Cost_switch
 *   eq. 2  W_c = 20 if the process has pending messages, else 0
 *   eq. 3  ERL' = ERL - dt   (dt: time since the message's arrival)
 *   eq. 4  W_r = min over pending messages m of (ERL_max - ERL'_m) / NF
 *   W_total = W_c + W_r; the candidate with the highest W_total goes first.
 *
 * ERL_max is MPL * 41 ms (the paper's footnote); NF = ERL_max / 100, so W_r
 * lies in [0, 100] (a message whose ERL' is below 0 or above ERL_max is
 * clamped). With CC_WR_MAX, eq. 4's min becomes a max: the reading of the
 * text ("the minimal rescheduling latency of their correspondents"), where
 * the soonest correspondent counts; CC_WR_MIN, the formula, is the default.
 */
#ifndef COSCHED_DECIDE_H
#define COSCHED_DECIDE_H

#include <stdbool.h>
#include <stddef.h>

#define CC_WC_PENDING 20.0        /* eq. 2 */
#define CC_ERL_PER_MPL_US 41000.0 /* the paper's footnote: ERL_max = MPL * 41 ms */

enum cc_wr_reduce { CC_WR_MIN = 0, CC_WR_MAX = 1 };

struct cc_params {
	double erl_max_us; /* ERL_max */
	enum cc_wr_reduce reduce;
};

/* One pending message: its sender node's ERL when it arrived, and its age. */
struct cc_msg {
	double erl_us;
	double age_us;
};

struct cc_cand {
	size_t nmsg; /* pending messages (0: none) */
	const struct cc_msg *msgs;
	double first_age_us; /* age of its oldest pending message: the tie-break */
	/* out */
	double wc, wr, w;
};

/* eq. 1; ENP may be fractional (a mean), ED and Cost_switch in us. */
double cc_erl_us(double ed_us, double enp, double cost_switch_us);

/* eq. 3 */
double cc_aged_erl_us(double erl_us, double dt_us);

/* eqs. 2 and 4 for one candidate. */
void cc_weigh(struct cc_cand *c, const struct cc_params *p);

/* Weighs every candidate and writes into ORDER the indices of those with
 * pending messages, highest W_total first (ties: the oldest message first,
 * then the lower index). Returns how many; two or more is a boost conflict. */
size_t cc_order(struct cc_cand *c, size_t n, const struct cc_params *p, size_t *order);

#endif /* COSCHED_DECIDE_H */
