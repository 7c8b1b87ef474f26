/* Matching-engine simulator: one process's receive posts and message arrivals
 * replayed through an MPI matching engine (issue 12; papers 002 Sec. 2.1, 004 Sec. 4.1).
 *
 * Plain C, no MPI: built on first use by commscope.matching.engines and called
 * through ctypes.  Events are given in time order; event i is a post (a receive
 * is posted: comm, source or -1 for any, tag or -1 for any) or an arrival (a
 * message: comm, source, tag).  Every queue entry is the event that queued it,
 * so an entry's index is also its age (what ob1 calls the sequence number).
 *
 * Engines:
 *   0 MPICH style: one posted-receive list and one unexpected list per process.
 *   1 ob1 style (Open MPI's pml/ob1 without custom matching): per communicator a
 *     list of any-source receives; per (communicator, source) a list of specific
 *     receives and a list of unexpected messages.  An arrival walks its source's
 *     specific list and the any-source list together, oldest first; an
 *     any-source post walks the sources' unexpected lists round-robin, starting
 *     after the source it matched last (ob1 does this to avoid starvation).
 *   2 tag-hashed bins: posted receives and unexpected messages hashed by
 *     (communicator, tag) into `bins` lists; any-tag receives in one more list
 *     walked together with the tag's bin, oldest first; an any-tag post walks
 *     every unexpected bin to its first match and takes the oldest.
 *
 * Per event: the entries compared (searched), the matching event (-1: it was
 * queued) and the lengths of both queues after the event.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { ENGINE_MPICH = 0, ENGINE_OB1 = 1, ENGINE_BINS = 2 };

typedef struct {
    int32_t comm, src, tag, next, prev;
} node_t;

typedef struct {
    int32_t head, tail;
} list_t;

typedef struct {
    node_t *nodes;
    int64_t compared;
} sim_t;

static void list_init(list_t *l, size_t n)
{
    for (size_t i = 0; i < n; i++) l[i].head = l[i].tail = -1;
}

static void push(sim_t *s, list_t *l, int32_t i)
{
    node_t *x = &s->nodes[i];
    x->next = -1;
    x->prev = l->tail;
    if (l->tail >= 0) s->nodes[l->tail].next = i;
    else l->head = i;
    l->tail = i;
}

static void unlink_node(sim_t *s, list_t *l, int32_t i)
{
    node_t *x = &s->nodes[i];
    if (x->prev >= 0) s->nodes[x->prev].next = x->next;
    else l->head = x->next;
    if (x->next >= 0) s->nodes[x->next].prev = x->prev;
    else l->tail = x->prev;
}

/* A posted receive p matches message (comm, src, tag); MPI tags of messages are >= 0. */
static inline int recv_matches(const node_t *p, int32_t comm, int32_t src, int32_t tag)
{
    return p->comm == comm && (p->src == src || p->src < 0) && (p->tag == tag || p->tag < 0);
}

/* First entry of l matching; counts every comparison. */
static int32_t find_msg(sim_t *s, const list_t *l, const node_t *recv)
{
    for (int32_t i = l->head; i >= 0; i = s->nodes[i].next) {
        s->compared++;
        if (recv_matches(recv, s->nodes[i].comm, s->nodes[i].src, s->nodes[i].tag)) return i;
    }
    return -1;
}

static int32_t find_recv(sim_t *s, const list_t *l, const node_t *msg)
{
    for (int32_t i = l->head; i >= 0; i = s->nodes[i].next) {
        s->compared++;
        if (recv_matches(&s->nodes[i], msg->comm, msg->src, msg->tag)) return i;
    }
    return -1;
}

/* Walk two lists of receives together, oldest entry first (ob1's match_incomming). */
static int32_t find_recv2(sim_t *s, const list_t *a, const list_t *b, const node_t *msg,
                          const list_t **from)
{
    int32_t i = a->head, j = b->head;
    while (i >= 0 || j >= 0) {
        int take_a = j < 0 || (i >= 0 && i < j);
        int32_t k = take_a ? i : j;
        s->compared++;
        if (recv_matches(&s->nodes[k], msg->comm, msg->src, msg->tag)) {
            *from = take_a ? a : b;
            return k;
        }
        if (take_a) i = s->nodes[i].next;
        else j = s->nodes[j].next;
    }
    return -1;
}

static inline uint32_t bin_of(int32_t comm, int32_t tag, int32_t bins)
{
    return ((uint32_t)tag * 2654435761u ^ (uint32_t)comm * 40503u) % (uint32_t)bins;
}

/* Returns the entries compared in all, or -1 on bad arguments / no memory. */
int64_t cs_match_run(int engine, int32_t bins, int64_t n, const int8_t *is_arrival,
                     const int32_t *comm, const int32_t *src, const int32_t *tag, int32_t ncomm,
                     int32_t nsrc, int64_t *partner, int32_t *searched, int32_t *posted_len,
                     int32_t *unexpected_len)
{
    if (n < 0 || n > INT32_MAX || ncomm < 1 || nsrc < 1 || (engine == ENGINE_BINS && bins < 1) ||
        engine < 0 || engine > 2)
        return -1;
    for (int64_t e = 0; e < n; e++)
        if (comm[e] < 0 || comm[e] >= ncomm || src[e] >= nsrc || src[e] < -1 ||
            (is_arrival[e] && (src[e] < 0 || tag[e] < 0)))
            return -1;
    sim_t s = {0};
    size_t nposted = 1, nunexp = 1, nwild = 0;
    if (engine == ENGINE_OB1) {
        nposted = nunexp = (size_t)ncomm * (size_t)nsrc;
        nwild = (size_t)ncomm;
    } else if (engine == ENGINE_BINS) {
        nposted = nunexp = (size_t)bins;
        nwild = 1;
    }
    s.nodes = malloc(sizeof(node_t) * (size_t)(n ? n : 1));
    list_t *posted = malloc(sizeof(list_t) * nposted), *unexp = malloc(sizeof(list_t) * nunexp);
    list_t *wild = malloc(sizeof(list_t) * (nwild ? nwild : 1));
    int32_t *last_probed = calloc((size_t)ncomm, sizeof(int32_t));
    if (!s.nodes || !posted || !unexp || !wild || !last_probed) {
        free(s.nodes), free(posted), free(unexp), free(wild), free(last_probed);
        return -1;
    }
    list_init(posted, nposted);
    list_init(unexp, nunexp);
    list_init(wild, nwild ? nwild : 1);
    int32_t plen = 0, ulen = 0;

    for (int64_t e = 0; e < n; e++) {
        int32_t i = (int32_t)e;
        node_t *x = &s.nodes[i];
        x->comm = comm[e];
        x->src = src[e];
        x->tag = tag[e];
        int64_t before = s.compared;
        int32_t m = -1;
        if (is_arrival[e]) {
            /* search the posted receives; else queue as unexpected */
            list_t *home, *u;
            const list_t *from = 0;
            if (engine == ENGINE_MPICH) {
                home = posted;
                u = unexp;
                m = find_recv(&s, home, x);
                from = home;
            } else if (engine == ENGINE_OB1) {
                home = &posted[(size_t)x->comm * nsrc + x->src];
                u = &unexp[(size_t)x->comm * nsrc + x->src];
                m = find_recv2(&s, home, &wild[x->comm], x, &from);
            } else {
                uint32_t b = bin_of(x->comm, x->tag, bins);
                home = &posted[b];
                u = &unexp[b];
                m = find_recv2(&s, home, &wild[0], x, &from);
            }
            if (m >= 0) {
                unlink_node(&s, (list_t *)from, m);
                plen--;
            } else {
                push(&s, u, i);
                ulen++;
            }
        } else {
            /* search the unexpected messages; else queue as posted */
            list_t *from = 0, *dest;
            if (engine == ENGINE_MPICH) {
                from = unexp;
                m = find_msg(&s, from, x);
                dest = posted;
            } else if (engine == ENGINE_OB1) {
                if (x->src >= 0) {
                    from = &unexp[(size_t)x->comm * nsrc + x->src];
                    m = find_msg(&s, from, x);
                    dest = &posted[(size_t)x->comm * nsrc + x->src];
                } else {
                    int32_t start = last_probed[x->comm];
                    for (int32_t k = 1; k <= nsrc && m < 0; k++) {
                        int32_t p = (start + k) % nsrc;
                        from = &unexp[(size_t)x->comm * nsrc + p];
                        m = find_msg(&s, from, x);
                        if (m >= 0) last_probed[x->comm] = p;
                    }
                    dest = &wild[x->comm];
                }
            } else if (x->tag >= 0) {
                uint32_t b = bin_of(x->comm, x->tag, bins);
                from = &unexp[b];
                m = find_msg(&s, from, x);
                dest = &posted[b];
            } else {
                /* any tag: the oldest first match over all bins */
                for (int32_t b = 0; b < bins; b++) {
                    int32_t k = find_msg(&s, &unexp[b], x);
                    if (k >= 0 && (m < 0 || k < m)) {
                        m = k;
                        from = &unexp[b];
                    }
                }
                dest = &wild[0];
            }
            if (m >= 0) {
                unlink_node(&s, from, m);
                ulen--;
            } else {
                push(&s, dest, i);
                plen++;
            }
        }
        partner[e] = m;
        searched[e] = (int32_t)(s.compared - before);
        posted_len[e] = plen;
        unexpected_len[e] = ulen;
    }
    free(s.nodes), free(posted), free(unexp), free(wild), free(last_probed);
    return s.compared;
}
