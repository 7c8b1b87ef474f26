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
 *
 * A queue is an array in arrival order, not a linked list: a search is a
 * sequential scan the hardware prefetches (a linked list's pointer chase is
 * bound by memory latency).  A removed entry is marked dead (comm -1, never
 * matches, not counted as compared) and the array is compacted once dead
 * entries outnumber live ones, so the counts are those of a linked list.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { ENGINE_MPICH = 0,
       ENGINE_OB1 = 1,
       ENGINE_BINS = 2 };
#define DEAD (-1)

typedef struct {
    int32_t comm, src, tag, id; /* id: the event that queued it (its age); comm DEAD: removed */
} ent_t;

typedef struct {
    ent_t *a;
    int32_t head, len, cap, dead;
} queue_t;

typedef struct {
    int64_t compared;
    int failed;
} sim_t;

static void push(sim_t *s, queue_t *q, ent_t e)
{
    if (q->len == q->cap) {
        int32_t cap = q->cap ? 2 * q->cap : 16;
        ent_t *a = realloc(q->a, sizeof(ent_t) * (size_t)cap);
        if (!a) {
            s->failed = 1;
            return;
        }
        q->a = a;
        q->cap = cap;
    }
    q->a[q->len++] = e;
}

static void remove_at(queue_t *q, int32_t k)
{
    q->a[k].comm = DEAD;
    q->dead++;
    while (q->head < q->len && q->a[q->head].comm == DEAD) {
        q->head++;
        q->dead--;
    }
    if (q->head == q->len) {
        q->head = q->len = q->dead = 0;
    } else if (q->dead > 32 && 2 * q->dead > q->len - q->head) {
        int32_t n = 0;
        for (int32_t i = q->head; i < q->len; i++)
            if (q->a[i].comm != DEAD) q->a[n++] = q->a[i];
        q->head = 0;
        q->len = n;
        q->dead = 0;
    }
}

/* A posted receive r matches message m; MPI tags of messages are >= 0.  Bitwise &
 * and |: one well-predicted branch per entry instead of up to five. */
static inline int matches(const ent_t *r, const ent_t *m)
{
    return (r->comm == m->comm) & ((r->src == m->src) | (r->src < 0)) &
           ((r->tag == m->tag) | (r->tag < 0));
}

/* First entry of q that matches `key` (its position, -1); counts live entries.
 * key_is_recv: q holds messages and key is a receive (a post searches the
 * unexpected queue), else q holds receives and key is a message. */
static inline int32_t scan(sim_t *s, const queue_t *q, const ent_t *key, int key_is_recv)
{
    int64_t c = 0;
    for (int32_t k = q->head; k < q->len; k++) {
        const ent_t *e = &q->a[k];
        c += e->comm != DEAD;
        if (key_is_recv ? matches(key, e) : matches(e, key)) {
            s->compared += c;
            return k;
        }
    }
    s->compared += c;
    return -1;
}

static int32_t find_msg(sim_t *s, const queue_t *q, const ent_t *r)
{
    return scan(s, q, r, 1);
}

static int32_t find_recv(sim_t *s, const queue_t *q, const ent_t *m)
{
    return scan(s, q, m, 0);
}

/* Oldest receive of two queues that message m matches, walking both by age
 * (ob1's match_incomming); *in_b says which queue it is in. */
static int32_t find_recv2(sim_t *s, const queue_t *a, const queue_t *b, const ent_t *m, int *in_b)
{
    int32_t i = a->head, j = b ? b->head : 0, jl = b ? b->len : 0;
    for (;;) {
        while (i < a->len && a->a[i].comm == DEAD) i++;
        while (j < jl && b->a[j].comm == DEAD) j++;
        int take_a;
        if (i < a->len && j < jl)
            take_a = a->a[i].id < b->a[j].id;
        else if (i < a->len)
            take_a = 1;
        else if (j < jl)
            take_a = 0;
        else
            return -1;
        const ent_t *e = take_a ? &a->a[i] : &b->a[j];
        s->compared++;
        if (matches(e, m)) {
            *in_b = !take_a;
            return take_a ? i : j;
        }
        if (take_a)
            i++;
        else
            j++;
    }
}

static inline int32_t live(const queue_t *q)
{
    return q->len - q->head - q->dead;
}

static inline uint32_t bin_of(int32_t comm, int32_t tag, int32_t bins)
{
    return ((uint32_t)tag * 2654435761u ^ (uint32_t)comm * 40503u) % (uint32_t)bins;
}

/* After a search: the matched entry leaves its queue (returns its event), or x
 * joins the other kind of queue (returns -1). */
static int32_t settle(sim_t *s, queue_t *from, int32_t m, queue_t *dest, ent_t x,
                      int32_t *from_len, int32_t *dest_len)
{
    if (m >= 0) {
        int32_t id = from->a[m].id;
        remove_at(from, m);
        (*from_len)--;
        return id;
    }
    push(s, dest, x);
    (*dest_len)++;
    return -1;
}

static void free_queues(queue_t *q, size_t n)
{
    if (!q) return;
    for (size_t i = 0; i < n; i++) free(q[i].a);
    free(q);
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
    sim_t s = {0, 0};
    size_t nlists = 1, nwild = 1;
    if (engine == ENGINE_OB1) {
        nlists = (size_t)ncomm * (size_t)nsrc;
        nwild = (size_t)ncomm;
    } else if (engine == ENGINE_BINS) {
        nlists = (size_t)bins;
    }
    queue_t *posted = calloc(nlists, sizeof(queue_t)), *unexp = calloc(nlists, sizeof(queue_t));
    queue_t *wild = calloc(nwild, sizeof(queue_t));
    int32_t *last_probed = calloc((size_t)ncomm, sizeof(int32_t));
    if (!posted || !unexp || !wild || !last_probed) s.failed = 1;
    int32_t plen = 0, ulen = 0;

    for (int64_t e = 0; e < n && !s.failed; e++) {
        ent_t x = {comm[e], src[e], tag[e], (int32_t)e};
        int64_t before = s.compared;
        int32_t m = -1, id = -1;
        if (is_arrival[e]) {
            /* search the posted receives; else queue as unexpected */
            queue_t *home, *u, *w = 0;
            if (engine == ENGINE_MPICH) {
                home = posted;
                u = unexp;
            } else if (engine == ENGINE_OB1) {
                home = &posted[(size_t)x.comm * nsrc + x.src];
                u = &unexp[(size_t)x.comm * nsrc + x.src];
                w = &wild[x.comm];
            } else {
                uint32_t b = bin_of(x.comm, x.tag, bins);
                home = &posted[b];
                u = &unexp[b];
                w = &wild[0];
            }
            int in_w = 0;
            m = w && live(w) ? find_recv2(&s, home, w, &x, &in_w) : find_recv(&s, home, &x);
            id = settle(&s, in_w ? w : home, m, u, x, &plen, &ulen);
        } else {
            /* search the unexpected messages; else queue as posted */
            queue_t *from = 0, *dest;
            if (engine == ENGINE_MPICH) {
                from = unexp;
                m = find_msg(&s, from, &x);
                dest = posted;
            } else if (engine == ENGINE_OB1) {
                if (x.src >= 0) {
                    from = &unexp[(size_t)x.comm * nsrc + x.src];
                    m = find_msg(&s, from, &x);
                    dest = &posted[(size_t)x.comm * nsrc + x.src];
                } else {
                    /* any source: the sources in turn, after the one matched last */
                    int32_t start = last_probed[x.comm];
                    for (int32_t k = 1; k <= nsrc && m < 0; k++) {
                        int32_t p = (start + k) % nsrc;
                        from = &unexp[(size_t)x.comm * nsrc + p];
                        m = find_msg(&s, from, &x);
                        if (m >= 0) last_probed[x.comm] = p;
                    }
                    dest = &wild[x.comm];
                }
            } else if (x.tag >= 0) {
                uint32_t b = bin_of(x.comm, x.tag, bins);
                from = &unexp[b];
                m = find_msg(&s, from, &x);
                dest = &posted[b];
            } else {
                /* any tag: the oldest first match over all bins */
                for (int32_t b = 0; b < bins; b++) {
                    int32_t k = find_msg(&s, &unexp[b], &x);
                    if (k >= 0 && (m < 0 || unexp[b].a[k].id < from->a[m].id)) {
                        m = k;
                        from = &unexp[b];
                    }
                }
                dest = &wild[0];
            }
            id = settle(&s, from, m, dest, x, &ulen, &plen);
        }
        partner[e] = id;
        searched[e] = (int32_t)(s.compared - before);
        posted_len[e] = plen;
        unexpected_len[e] = ulen;
    }
    free_queues(posted, posted ? nlists : 0);
    free_queues(unexp, unexp ? nlists : 0);
    free_queues(wild, wild ? nwild : 0);
    free(last_probed);
    return s.failed ? -1 : s.compared;
}
