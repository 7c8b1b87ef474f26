/* A program whose matching queues are known at every pause, for the matching
 * simulator's validation against Open MPI's ob1 queue-length pvars.
 *
 * Three ranks; rank 0 receives, ranks 1 and 2 send (8-byte messages, eager).
 * Phases are separated by a barrier on a duplicate of MPI_COMM_WORLD (its
 * messages stay out of WORLD's queues, and it makes rank 0 progress, so every
 * message sent before it sits in rank 0's queues), then a pause of PAUSE_MS
 * in which the snapshot thread samples the pvars.  Queues of rank 0 on WORLD
 * during each pause (ob1 counts specific-source receives and unexpected
 * messages per source; any-source receives are in neither count):
 *
 *   A  rank 0 posts Irecv(src 1, tags 0..5) and Irecv(ANY_SOURCE, tags 100, 101)
 *        -> posted[1] = 6, unexpected = 0 (2 any-source receives not counted)
 *   B  rank 1 sends tags 10, 11, 12, 13, then 0, 1
 *        -> posted[1] = 4, unexpected[1] = 4
 *   C  rank 2 sends tag 100, rank 1 sends tag 101 (both match the any-source
 *      receives); rank 2 sends tag 20 twice; rank 0 posts Irecv(src 1, tag 10),
 *      Irecv(src 1, tag 11) and Irecv(ANY_SOURCE, ANY_TAG)
 *        -> posted[1] = 4, unexpected[1] = 1, unexpected[2] = 2
 *           (the any-source, any-tag receive takes rank 1's tag 12: ob1 walks the
 *            sources from the one after the last it matched, here rank 1, and
 *            tag 12 is also the oldest message, as MPICH would choose)
 *   D  rank 1 sends tags 2..5; rank 0 receives what is left (blocking), waits all
 *        -> all queues empty
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef PAUSE_MS
#define PAUSE_MS 400
#endif

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, 0);
}

static void phase_end(MPI_Comm ctl)
{
    MPI_Barrier(ctl);
    pause_ms(PAUSE_MS);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 3) {
        if (rank == 0) fprintf(stderr, "known_queues: needs exactly 3 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm ctl;
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    double buf[32] = {0}, x = 1.0;
    MPI_Request req[16];
    int nreq = 0;
    phase_end(ctl); /* a quiet start: the first snapshots see empty queues */

    /* A */
    if (rank == 0) {
        for (int t = 0; t <= 5; t++) MPI_Irecv(&buf[t], 1, MPI_DOUBLE, 1, t, MPI_COMM_WORLD, &req[nreq++]);
        MPI_Irecv(&buf[6], 1, MPI_DOUBLE, MPI_ANY_SOURCE, 100, MPI_COMM_WORLD, &req[nreq++]);
        MPI_Irecv(&buf[7], 1, MPI_DOUBLE, MPI_ANY_SOURCE, 101, MPI_COMM_WORLD, &req[nreq++]);
    }
    phase_end(ctl);

    /* B */
    if (rank == 1) {
        int tags[] = {10, 11, 12, 13, 0, 1};
        for (int i = 0; i < 6; i++) MPI_Send(&x, 1, MPI_DOUBLE, 0, tags[i], MPI_COMM_WORLD);
    }
    phase_end(ctl);

    /* C */
    if (rank == 2) MPI_Send(&x, 1, MPI_DOUBLE, 0, 100, MPI_COMM_WORLD);
    MPI_Barrier(ctl); /* the any-source receive of tag 100 takes rank 2's message */
    if (rank == 1) MPI_Send(&x, 1, MPI_DOUBLE, 0, 101, MPI_COMM_WORLD);
    if (rank == 2) {
        MPI_Send(&x, 1, MPI_DOUBLE, 0, 20, MPI_COMM_WORLD);
        MPI_Send(&x, 1, MPI_DOUBLE, 0, 20, MPI_COMM_WORLD);
    }
    MPI_Barrier(ctl);
    if (rank == 0) {
        MPI_Irecv(&buf[8], 1, MPI_DOUBLE, 1, 10, MPI_COMM_WORLD, &req[nreq++]);
        MPI_Irecv(&buf[9], 1, MPI_DOUBLE, 1, 11, MPI_COMM_WORLD, &req[nreq++]);
        MPI_Irecv(&buf[10], 1, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req[nreq++]);
    }
    phase_end(ctl);

    /* D */
    if (rank == 1)
        for (int t = 2; t <= 5; t++) MPI_Send(&x, 1, MPI_DOUBLE, 0, t, MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Status st;
        MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        /* one message of tags 12, 13, 20, 20 was taken by the any-tag receive */
        for (int i = 0; i < 3; i++) MPI_Recv(&buf[11 + i], 1, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                                             MPI_COMM_WORLD, &st);
    }
    phase_end(ctl);
    MPI_Comm_free(&ctl);
    MPI_Finalize();
    return 0;
}
