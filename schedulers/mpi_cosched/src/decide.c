/* The CC choice of paper 001 (eqs. 1-4); see decide.h. */
#include "decide.h"

#include <math.h>

double cc_erl_us(double ed_us, double enp, double cost_switch_us)
{
	if (enp < 0)
		enp = 0;
	return ed_us * enp + (ceil(enp) + 1.0) * cost_switch_us;
}

double cc_aged_erl_us(double erl_us, double dt_us)
{
	return erl_us - dt_us;
}

void cc_weigh(struct cc_cand *c, const struct cc_params *p)
{
	double nf = p->erl_max_us / 100.0;
	c->wc = c->nmsg > 0 ? CC_WC_PENDING : 0.0;
	c->wr = 0.0;
	for (size_t m = 0; m < c->nmsg; m++) {
		double v = p->erl_max_us - cc_aged_erl_us(c->msgs[m].erl_us, c->msgs[m].age_us);
		if (v < 0)
			v = 0;
		if (v > p->erl_max_us)
			v = p->erl_max_us;
		v = nf > 0 ? v / nf : 0;
		if (m == 0 || (p->reduce == CC_WR_MIN ? v < c->wr : v > c->wr))
			c->wr = v;
	}
	c->w = c->wc + c->wr;
}

static bool before(const struct cc_cand *a, size_t ia, const struct cc_cand *b, size_t ib)
{
	if (a->w != b->w)
		return a->w > b->w;
	if (a->first_age_us != b->first_age_us)
		return a->first_age_us > b->first_age_us;
	return ia < ib;
}

size_t cc_order(struct cc_cand *c, size_t n, const struct cc_params *p, size_t *order)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		cc_weigh(&c[i], p);
		if (c[i].nmsg == 0)
			continue;
		/* insertion sort: at most a few dozen candidates per node */
		size_t j = k++;
		while (j > 0 && before(&c[i], i, &c[order[j - 1]], order[j - 1])) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	return k;
}
