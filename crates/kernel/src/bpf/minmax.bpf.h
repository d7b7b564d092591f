/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kathleen Nichols' windowed min/max filter, as Linux lib/win_minmax.c
 * implements it: the best, second-best and third-best samples of a sliding
 * window (of time or of round trips), so that the extreme over the window
 * is known in constant space and time, and almost always equals what a
 * filter keeping every sample would give. The three choices stay spread
 * over the window (a quarter and a half of it apart), which bounds the
 * error when the samples rise monotonically.
 *
 * A line-by-line port of crates/cc/src/minmax.rs; BBR keeps its bandwidth
 * estimate in one. struct minmax is the kernel's (vmlinux.h), so that a
 * filter in an algorithm's private area has the kernel's layout; being
 * declared for CO-RE, its member offsets are relocated against the running
 * kernel's struct minmax, the same {u32 t, v}[3] in every kernel.
 */
#ifndef __KLEINROCK_MINMAX_BPF_H__
#define __KLEINROCK_MINMAX_BPF_H__

/* minmax_get(): the current best. */
static __always_inline __u32 minmax_get(const struct minmax *m)
{
	return m->s[0].v;
}

/* minmax_reset(): forget everything but this sample. */
static __always_inline __u32 minmax_reset(struct minmax *m, __u32 t,
					  __u32 meas)
{
	struct minmax_sample val = { .t = t, .v = meas };

	m->s[2] = m->s[1] = m->s[0] = val;
	return m->s[0].v;
}

/* minmax_subwin_update(): age the choices as time passes. */
static __always_inline __u32 minmax_subwin_update(struct minmax *m, __u32 win,
						  const struct minmax_sample *val)
{
	__u32 dt = val->t - m->s[0].t;

	if (dt > win) {
		/*
		 * A whole window without a new best: promote the runners-up,
		 * twice if the second choice has aged out too (the third was
		 * checked to be inside the window on entry).
		 */
		m->s[0] = m->s[1];
		m->s[1] = m->s[2];
		m->s[2] = *val;
		if (val->t - m->s[0].t > win) {
			m->s[0] = m->s[1];
			m->s[1] = m->s[2];
			m->s[2] = *val;
		}
	} else if (m->s[1].t == m->s[0].t && dt > win / 4) {
		/* A quarter window passed: a second choice from the second
		 * quarter. */
		m->s[2] = m->s[1] = *val;
	} else if (m->s[2].t == m->s[1].t && dt > win / 2) {
		/* Half a window passed: a third choice from the second half. */
		m->s[2] = *val;
	}
	return m->s[0].v;
}

/* minmax_running_max(): feed a sample, get the windowed max. */
static __always_inline __u32 minmax_running_max(struct minmax *m, __u32 win,
						__u32 t, __u32 meas)
{
	struct minmax_sample val = { .t = t, .v = meas };

	if (val.v >= m->s[0].v ||	/* a new max */
	    val.t - m->s[2].t > win)	/* nothing left in the window */
		return minmax_reset(m, t, meas);

	if (val.v >= m->s[1].v)
		m->s[2] = m->s[1] = val;
	else if (val.v >= m->s[2].v)
		m->s[2] = val;

	return minmax_subwin_update(m, win, &val);
}

/* minmax_running_min(): feed a sample, get the windowed min. */
static __always_inline __u32 minmax_running_min(struct minmax *m, __u32 win,
						__u32 t, __u32 meas)
{
	struct minmax_sample val = { .t = t, .v = meas };

	if (val.v <= m->s[0].v ||	/* a new min */
	    val.t - m->s[2].t > win)	/* nothing left in the window */
		return minmax_reset(m, t, meas);

	if (val.v <= m->s[1].v)
		m->s[2] = m->s[1] = val;
	else if (val.v <= m->s[2].v)
		m->s[2] = val;

	return minmax_subwin_update(m, win, &val);
}

#endif /* __KLEINROCK_MINMAX_BPF_H__ */
