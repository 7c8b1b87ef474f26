#!/usr/bin/env python3
"""The MPI functions commscope's profiling library wraps, and the wrapper generator.

One line per function: ``category | extra | prototype``.  The category picks what the
wrapper counts (see HOOKS); ``hand`` functions are written by hand
(cs_prof_requests.c, cs_prof_init.c) and only get their function id here.  ``extra``
is the bytes expression of a collective, ``sent ; received`` for a neighbourhood
collective.  Prototypes use canonical parameter names (``newcomm`` for every new
communicator, ``request`` for the returned request) so one hook fits a whole family.

Every function also gets its MPI-4 large-count variant (``MPI_Send_c``) when the MPI
declares one: same parameter names, the MPI's own types.

Which functions an MPI has, and their exact parameter types (``const`` differs
between MPIs, e.g. MPI_Pready_list), come from its own mpi.h: the build passes the
preprocessed header, and a function it does not declare is left out, not the build.

Fortran: Open MPI's Fortran bindings (mpif.h, ``use mpi``, ``use mpi_f08``) call the
``PMPI_*`` C functions directly, so C wrappers never see Fortran calls.  When the
MPI's Fortran library is built that way (``--fortran-lib``: it references
``PMPI_Send`` and not ``MPI_Send``), Fortran wrappers are generated too: each takes
the Fortran arguments, calls the MPI's own ``pmpi_*_`` Fortran entry point with them
unchanged, and counts through the same hook with C views of the arguments.  MPICH's
mpif.h bindings call the C ``MPI_*`` functions, so those calls are counted in C; its
mpi_f08 bindings do for routines with a buffer only, so every ``mpi_*_f08_`` entry
point is wrapped (forwarded to the MPI's own through the dynamic linker).  A call is
counted once either way (cs_prof_fortran.h).

    python3 mpi_functions.py OUTDIR [--header FILE.i] [--fortran-lib LIB ...]
    python3 mpi_functions.py --json [--header FILE.i]     the function table
"""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

FUNCTIONS = r"""
hand     |                                  | MPI_Init(int *argc, char ***argv)
hand     |                                  | MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
hand     |                                  | MPI_Finalize(void)
hand     |                                  | MPI_Pcontrol(const int level, ...)
hand     |                                  | MPI_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session)
hand     |                                  | MPI_Session_finalize(MPI_Session *session)
# ---- point to point
send     |                                  | MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
send     |                                  | MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
send     |                                  | MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
send     |                                  | MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
isend    |                                  | MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)
isend    |                                  | MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)
isend    |                                  | MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)
isend    |                                  | MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)
recv     |                                  | MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status)
irecv    |                                  | MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request)
sendrecv |                                  | MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status)
sendrecv_replace |                          | MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Status *status)
isendrecv |                                 | MPI_Isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Request *request)
isendrecv_replace |                         | MPI_Isendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Request *request)
psend_init |                                | MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)
psend_init |                                | MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)
psend_init |                                | MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)
psend_init |                                | MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)
precv_init |                                | MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request)
part_send_init |                            | MPI_Psend_init(const void *buf, int partitions, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request)
part_recv_init |                            | MPI_Precv_init(void *buf, int partitions, MPI_Count count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request)
calls    |                                  | MPI_Pready(int partition, MPI_Request request)
calls    |                                  | MPI_Pready_range(int partition_low, int partition_high, MPI_Request request)
calls    |                                  | MPI_Pready_list(int length, const int array_of_partitions[], MPI_Request request)
calls    |                                  | MPI_Parrived(MPI_Request request, int partition, int *flag)
start    |                                  | MPI_Start(MPI_Request *request)
startall |                                  | MPI_Startall(int count, MPI_Request array_of_requests[])
probe    |                                  | MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
iprobe   |                                  | MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
mprobe   |                                  | MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
improbe  |                                  | MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status)
calls    |                                  | MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status)
imrecv   |                                  | MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request)
calls    |                                  | MPI_Buffer_attach(void *buffer, int size)
calls    |                                  | MPI_Buffer_detach(void *buffer_addr, int *size)
calls    |                                  | MPI_Buffer_flush(void)
calls    |                                  | MPI_Buffer_iflush(MPI_Request *request)
calls    |                                  | MPI_Comm_attach_buffer(MPI_Comm comm, void *buffer, int size)
calls    |                                  | MPI_Comm_detach_buffer(MPI_Comm comm, void *buffer_addr, int *size)
calls    |                                  | MPI_Comm_flush_buffer(MPI_Comm comm)
calls    |                                  | MPI_Comm_iflush_buffer(MPI_Comm comm, MPI_Request *request)
calls    |                                  | MPI_Session_attach_buffer(MPI_Session session, void *buffer, int size)
calls    |                                  | MPI_Session_detach_buffer(MPI_Session session, void *buffer_addr, int *size)
calls    |                                  | MPI_Session_flush_buffer(MPI_Session session)
calls    |                                  | MPI_Session_iflush_buffer(MPI_Session session, MPI_Request *request)
# ---- completion (hand: cs_prof_requests.c)
hand     |                                  | MPI_Wait(MPI_Request *request, MPI_Status *status)
hand     |                                  | MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
hand     |                                  | MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
hand     |                                  | MPI_Testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[])
hand     |                                  | MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status)
hand     |                                  | MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status)
hand     |                                  | MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[], MPI_Status array_of_statuses[])
hand     |                                  | MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[], MPI_Status array_of_statuses[])
hand     |                                  | MPI_Request_free(MPI_Request *request)
cancel   |                                  | MPI_Cancel(MPI_Request *request)
calls    |                                  | MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
calls    |                                  | MPI_Request_get_status_any(int count, const MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status)
calls    |                                  | MPI_Request_get_status_all(int count, const MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[])
calls    |                                  | MPI_Request_get_status_some(int incount, const MPI_Request array_of_requests[], int *outcount, int array_of_indices[], MPI_Status array_of_statuses[])
grequest |                                  | MPI_Grequest_start(MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn, MPI_Grequest_cancel_function *cancel_fn, void *extra_state, MPI_Request *request)
calls    |                                  | MPI_Grequest_complete(MPI_Request request)
# ---- collectives: blocking, nonblocking, persistent
coll     | 0                                | MPI_Barrier(MPI_Comm comm)
coll     | cs_bytes(count, datatype)        | MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
coll     | cs_bytes(count, datatype)        | MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)
coll     | cs_bytes(count, datatype)        | MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
coll     | cs_bytes_inplace(sendbuf, sendcount, sendtype, recvcount, recvtype) | MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
coll     | cs_bytes_inplace(sendbuf, sendcount, sendtype, 0, recvtype) | MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm)
coll     | cs_bytes(recvcount, recvtype)    | MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
coll     | cs_bytes(recvcount, recvtype)    | MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
coll     | cs_bytes_inplace(sendbuf, sendcount, sendtype, recvcount, recvtype) | MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
coll     | cs_bytes_inplace(sendbuf, sendcount, sendtype, 0, recvtype) | MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
coll     | cs_bytes_inplace(sendbuf, sendcount, sendtype, recvcount, recvtype) | MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
coll     | cs_vbytes(sendbuf, sendcounts, sendtype, recvcounts, recvtype, comm) | MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
coll     | cs_wbytes(sendbuf, sendcounts, sendtypes, recvcounts, recvtypes, comm) | MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
coll     | cs_vbytes(MPI_IN_PLACE, recvcounts, datatype, recvcounts, datatype, comm) | MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
coll     | cs_bytes(recvcount, datatype)    | MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
coll     | cs_bytes(count, datatype)        | MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
coll     | cs_bytes(count, datatype)        | MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
calls    |                                  | MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype, MPI_Op op)
# ---- neighbourhood collectives (extra: bytes sent ; bytes received)
ncoll    | cs_nbytes(comm, CS_OUT, cs_bytes(sendcount, sendtype)) ; cs_nbytes(comm, CS_IN, cs_bytes(recvcount, recvtype)) | MPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
ncoll    | cs_nbytes(comm, CS_OUT, cs_bytes(sendcount, sendtype)) ; cs_nbytes_v(comm, CS_IN, recvcounts, recvtype) | MPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
ncoll    | cs_nbytes(comm, CS_OUT, cs_bytes(sendcount, sendtype)) ; cs_nbytes(comm, CS_IN, cs_bytes(recvcount, recvtype)) | MPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
ncoll    | cs_nbytes_v(comm, CS_OUT, sendcounts, sendtype) ; cs_nbytes_v(comm, CS_IN, recvcounts, recvtype) | MPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
ncoll    | cs_nbytes_w(comm, CS_OUT, sendcounts, sendtypes) ; cs_nbytes_w(comm, CS_IN, recvcounts, recvtypes) | MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
# ---- communicators
comm_new |                                  | MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
comm_new |                                  | MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
comm_idup |                                 | MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
comm_idup |                                 | MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm, MPI_Request *request)
comm_new |                                  | MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
comm_new |                                  | MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
comm_new |                                  | MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
comm_new |                                  | MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
comm_new |                                  | MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm *newcomm)
comm_new |                                  | MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
comm_new |                                  | MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder, MPI_Comm *newcomm)
comm_new |                                  | MPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[], const int degrees[], const int destinations[], const int weights[], MPI_Info info, int reorder, MPI_Comm *newcomm)
comm_new |                                  | MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[], const int sourceweights[], int outdegree, const int destinations[], const int destweights[], MPI_Info info, int reorder, MPI_Comm *newcomm)
comm_new |                                  | MPI_Intercomm_create(MPI_Comm comm, int local_leader, MPI_Comm peer_comm, int remote_leader, int tag, MPI_Comm *newcomm)
comm_new |                                  | MPI_Intercomm_merge(MPI_Comm comm, int high, MPI_Comm *newcomm)
comm_new |                                  | MPI_Comm_spawn(const char *command, char *argv[], int maxprocs, MPI_Info info, int root, MPI_Comm comm, MPI_Comm *newcomm, int array_of_errcodes[])
comm_new |                                  | MPI_Comm_spawn_multiple(int count, char *array_of_commands[], char **array_of_argv[], const int array_of_maxprocs[], const MPI_Info array_of_info[], int root, MPI_Comm comm, MPI_Comm *newcomm, int array_of_errcodes[])
comm_new |                                  | MPI_Comm_accept(const char *port_name, MPI_Info info, int root, MPI_Comm comm, MPI_Comm *newcomm)
comm_new |                                  | MPI_Comm_connect(const char *port_name, MPI_Info info, int root, MPI_Comm comm, MPI_Comm *newcomm)
comm_group |                                | MPI_Comm_join(int fd, MPI_Comm *newcomm)
comm_group |                                | MPI_Comm_create_from_group(MPI_Group group, const char *stringtag, MPI_Info info, MPI_Errhandler errhandler, MPI_Comm *newcomm)
comm_group |                                | MPI_Intercomm_create_from_groups(MPI_Group local_group, int local_leader, MPI_Group remote_group, int remote_leader, const char *stringtag, MPI_Info info, MPI_Errhandler errhandler, MPI_Comm *newcomm)
calls    |                                  | MPI_Group_from_session_pset(MPI_Session session, const char *pset_name, MPI_Group *newgroup)
comm_free |                                 | MPI_Comm_free(MPI_Comm *comm)
comm_free |                                 | MPI_Comm_disconnect(MPI_Comm *comm)
calls    |                                  | MPI_Comm_set_info(MPI_Comm comm, MPI_Info info)
type_free |                                 | MPI_Type_free(MPI_Datatype *datatype)
# ---- one-sided: windows, communication, synchronisation
win_new  |                                  | MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win)
win_new  |                                  | MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win)
win_new  |                                  | MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win)
win_new  |                                  | MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
win_free |                                  | MPI_Win_free(MPI_Win *win)
calls    |                                  | MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)
calls    |                                  | MPI_Win_detach(MPI_Win win, const void *base)
calls    |                                  | MPI_Win_set_info(MPI_Win win, MPI_Info info)
rma      | PUT                              | MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
rma      | GET                              | MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
rma      | ACC                              | MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
rma_getacc |                                | MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, void *result_addr, int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
rma_fetch |                                 | MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win)
rma_fetch |                                 | MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr, MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win)
rrma     | PUT                              | MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
rrma     | GET                              | MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
rrma     | ACC                              | MPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
rrma_getacc |                               | MPI_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, void *result_addr, int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
calls    |                                  | MPI_Win_fence(int assert, MPI_Win win)
calls    |                                  | MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
calls    |                                  | MPI_Win_unlock(int rank, MPI_Win win)
calls    |                                  | MPI_Win_lock_all(int assert, MPI_Win win)
calls    |                                  | MPI_Win_unlock_all(MPI_Win win)
calls    |                                  | MPI_Win_flush(int rank, MPI_Win win)
calls    |                                  | MPI_Win_flush_all(MPI_Win win)
calls    |                                  | MPI_Win_flush_local(int rank, MPI_Win win)
calls    |                                  | MPI_Win_flush_local_all(MPI_Win win)
calls    |                                  | MPI_Win_sync(MPI_Win win)
calls    |                                  | MPI_Win_post(MPI_Group group, int assert, MPI_Win win)
calls    |                                  | MPI_Win_start(MPI_Group group, int assert, MPI_Win win)
calls    |                                  | MPI_Win_complete(MPI_Win win)
calls    |                                  | MPI_Win_wait(MPI_Win win)
calls    |                                  | MPI_Win_test(MPI_Win win, int *flag)
# ---- MPI-IO
file_open |                                 | MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
file_close |                                | MPI_File_close(MPI_File *fh)
calls    |                                  | MPI_File_delete(const char *filename, MPI_Info info)
calls    |                                  | MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char *datarep, MPI_Info info)
calls    |                                  | MPI_File_sync(MPI_File fh)
calls    |                                  | MPI_File_set_size(MPI_File fh, MPI_Offset size)
calls    |                                  | MPI_File_preallocate(MPI_File fh, MPI_Offset size)
calls    |                                  | MPI_File_seek(MPI_File fh, MPI_Offset offset, int whence)
calls    |                                  | MPI_File_seek_shared(MPI_File fh, MPI_Offset offset, int whence)
calls    |                                  | MPI_File_get_size(MPI_File fh, MPI_Offset *size)
calls    |                                  | MPI_File_get_position_shared(MPI_File fh, MPI_Offset *offset)
calls    |                                  | MPI_File_set_atomicity(MPI_File fh, int flag)
calls    |                                  | MPI_File_set_info(MPI_File fh, MPI_Info info)
io_read  |                                  | MPI_File_read_at(MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
io_read  |                                  | MPI_File_read_at_all(MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
io_write |                                  | MPI_File_write_at(MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
io_write |                                  | MPI_File_write_at_all(MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
io_iread |                                  | MPI_File_iread_at(MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype, MPI_Request *request)
io_iread |                                  | MPI_File_iread_at_all(MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype, MPI_Request *request)
io_iwrite |                                 | MPI_File_iwrite_at(MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype, MPI_Request *request)
io_iwrite |                                 | MPI_File_iwrite_at_all(MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype, MPI_Request *request)
io_read  |                                  | MPI_File_read(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
io_read  |                                  | MPI_File_read_all(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
io_write |                                  | MPI_File_write(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
io_write |                                  | MPI_File_write_all(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
io_iread |                                  | MPI_File_iread(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Request *request)
io_iread |                                  | MPI_File_iread_all(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Request *request)
io_iwrite |                                 | MPI_File_iwrite(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Request *request)
io_iwrite |                                 | MPI_File_iwrite_all(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Request *request)
io_read  |                                  | MPI_File_read_shared(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
io_write |                                  | MPI_File_write_shared(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
io_iread |                                  | MPI_File_iread_shared(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Request *request)
io_iwrite |                                 | MPI_File_iwrite_shared(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Request *request)
io_read  |                                  | MPI_File_read_ordered(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
io_write |                                  | MPI_File_write_ordered(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
calls    |                                  | MPI_File_read_at_all_begin(MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype)
io_read_end |                               | MPI_File_read_at_all_end(MPI_File fh, void *buf, MPI_Status *status)
io_write_begin |                            | MPI_File_write_at_all_begin(MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype)
calls    |                                  | MPI_File_write_at_all_end(MPI_File fh, const void *buf, MPI_Status *status)
calls    |                                  | MPI_File_read_all_begin(MPI_File fh, void *buf, int count, MPI_Datatype datatype)
io_read_end |                               | MPI_File_read_all_end(MPI_File fh, void *buf, MPI_Status *status)
io_write_begin |                            | MPI_File_write_all_begin(MPI_File fh, const void *buf, int count, MPI_Datatype datatype)
calls    |                                  | MPI_File_write_all_end(MPI_File fh, const void *buf, MPI_Status *status)
calls    |                                  | MPI_File_read_ordered_begin(MPI_File fh, void *buf, int count, MPI_Datatype datatype)
io_read_end |                               | MPI_File_read_ordered_end(MPI_File fh, void *buf, MPI_Status *status)
io_write_begin |                            | MPI_File_write_ordered_begin(MPI_File fh, const void *buf, int count, MPI_Datatype datatype)
calls    |                                  | MPI_File_write_ordered_end(MPI_File fh, const void *buf, MPI_Status *status)
"""

# ---- what is deliberately not wrapped ------------------------------------------
# Every function the MPI's mpi.h declares in these families (data movement, files,
# windows, requests, communicators, buffers, sessions) is either wrapped (FUNCTIONS)
# or listed in LEFT_OUT with the reason (tests/test_wrapped_coverage.py checks both
# wheels' headers: a new function in a family fails it until it is one or the other).
# A _c (large-count) variant shares its base function's entry.  By name prefix:
_FAMILY_PREFIXES = """
    File_ Win_ Comm_ Intercomm_ Session_ Buffer_
    Send Bsend Ssend Rsend Isend Ibsend Issend Irsend Recv Irecv Probe Iprobe Mprobe Improbe
    Mrecv Imrecv Psend Precv Pready Parrived
    Barrier Ibarrier Bcast Ibcast Reduce Ireduce Allreduce Iallreduce Gather Igather Scatter
    Iscatter Allgather Iallgather Alltoall Ialltoall Scan Iscan Exscan Iexscan Neighbor_
    Ineighbor_
    Put Rput Get Rget Accumulate Raccumulate Fetch_and_op Compare_and_swap
    Wait Test Start Cancel Request_ Grequest_
    Cart_create Cart_sub Graph_create Dist_graph_create Open_port Close_port Publish_name
    Unpublish_name Lookup_name
"""
FAMILIES = re.compile(
    "MPI_(" + "|".join(sorted(_FAMILY_PREFIXES.split(), key=len, reverse=True)) + ")"
)

_WHY = {
    "a local query (no communication, no I/O, no waiting)": "MPI_Comm_rank MPI_Comm_size MPI_Comm_remote_size MPI_Comm_test_inter MPI_Comm_compare "
    "MPI_Comm_get_info MPI_Comm_get_parent MPI_Comm_group MPI_Comm_remote_group "
    "MPI_File_get_amode MPI_File_get_atomicity MPI_File_get_byte_offset MPI_File_get_group "
    "MPI_File_get_info MPI_File_get_position MPI_File_get_type_extent MPI_File_get_view "
    "MPI_Win_get_group MPI_Win_get_info MPI_Win_shared_query MPI_Session_get_info "
    "MPI_Session_get_nth_pset MPI_Session_get_num_psets MPI_Session_get_pset_info "
    "MPI_Get_library_version MPI_Get_processor_name MPI_Get_version MPI_Get_hw_resource_info "
    "MPI_Get_address",
    "reads a status or a request's flag: the call that moved the data is counted": "MPI_Get_count MPI_Get_elements MPI_Get_elements_x MPI_Test_cancelled",
    "a handle conversion (Fortran or the integer ABI)": "MPI_Comm_c2f MPI_File_c2f MPI_Request_c2f MPI_Session_c2f MPI_Win_c2f MPI_Comm_f2c "
    "MPI_File_f2c MPI_Request_f2c MPI_Session_f2c MPI_Win_f2c MPI_Comm_toint MPI_File_toint "
    "MPI_Request_toint MPI_Session_toint MPI_Win_toint MPI_Comm_fromint MPI_File_fromint "
    "MPI_Request_fromint MPI_Session_fromint MPI_Win_fromint",
    "attribute caching, names and error handlers: local bookkeeping": "MPI_Comm_call_errhandler MPI_Comm_create_errhandler MPI_Comm_get_errhandler "
    "MPI_Comm_set_errhandler MPI_Comm_create_keyval MPI_Comm_free_keyval MPI_Comm_get_attr "
    "MPI_Comm_set_attr MPI_Comm_delete_attr MPI_Comm_get_name MPI_Comm_set_name "
    "MPI_File_call_errhandler MPI_File_create_errhandler MPI_File_get_errhandler "
    "MPI_File_set_errhandler MPI_Session_call_errhandler MPI_Session_create_errhandler "
    "MPI_Session_get_errhandler MPI_Session_set_errhandler MPI_Win_call_errhandler "
    "MPI_Win_create_errhandler MPI_Win_get_errhandler MPI_Win_set_errhandler "
    "MPI_Win_create_keyval MPI_Win_free_keyval MPI_Win_get_attr MPI_Win_set_attr "
    "MPI_Win_delete_attr MPI_Win_get_name MPI_Win_set_name",
    "a session's hints: local (Open MPI's; not in MPI-4.1)": "MPI_Session_set_info",
    "port and name service of dynamic processes: talks to the runtime, not to ranks "
    "(MPI_Comm_accept/connect, which wait for the peer, are wrapped)": "MPI_Open_port MPI_Close_port MPI_Publish_name MPI_Unpublish_name MPI_Lookup_name",
}
#: {function: why it is not wrapped}, for the families above.
LEFT_OUT = {name: why for why, names in _WHY.items() for name in names.split()}


def unaccounted(declared, wrapped):
    """The functions of ``declared`` (names from an mpi.h) in FAMILIES that are neither
    in ``wrapped`` nor in LEFT_OUT (a ``_c`` variant by its base name)."""
    return sorted(
        n
        for n in declared
        if FAMILIES.match(n)
        and n not in wrapped
        and (n[:-2] if n.endswith("_c") else n) not in LEFT_OUT
    )


# Nonblocking and persistent collectives are derived from the blocking ones above:
# MPI_Ibcast(..., MPI_Request *request) and MPI_Bcast_init(..., MPI_Info info,
# MPI_Request *request), and likewise for the neighbourhood collectives.
DERIVED = {"coll": ("icoll", "pcoll_init"), "ncoll": ("incoll", "pncoll_init")}

# What each category's wrapper does around the PMPI call: (before, after success).
# F is the function id, t0_ the entry time (0 unless timers or the trace are on),
# BYTES / SENT / RECEIVED the line's extra expressions, KIND its rma kind.
HOOKS = {
    "send": ("", "CS_BIN_TIME(cs_on_send(sets_, F, count, datatype, dest, tag, comm, t0_));"),
    "isend": (
        "",
        "CS_BIN_TIME(cs_on_isend(sets_, F, count, datatype, dest, tag, comm, *request, t0_));",
    ),
    "recv": (
        "CS_STATUS(status); uint64_t *rp_ = cs_recv_peer(sets_, s_, source, comm);",
        "CS_BIN_TIME(cs_on_recv(sets_, F, source, tag, comm, status, t0_, rp_));",
    ),
    "irecv": ("", "cs_on_irecv(sets_, F, count, datatype, source, tag, comm, *request, t0_);"),
    "sendrecv": (
        "CS_STATUS(status);",
        "CS_BIN_TIME(cs_on_send(sets_, F, sendcount, sendtype, dest, sendtag, comm, t0_)); "
        "CS_BIN_TIME(cs_on_recv(sets_, F, source, recvtag, comm, status, t0_, 0));",
    ),
    "sendrecv_replace": (
        "CS_STATUS(status);",
        "CS_BIN_TIME(cs_on_send(sets_, F, count, datatype, dest, sendtag, comm, t0_)); "
        "CS_BIN_TIME(cs_on_recv(sets_, F, source, recvtag, comm, status, t0_, 0));",
    ),
    "isendrecv": (
        "",
        "CS_BIN_TIME(cs_on_isendrecv(sets_, F, sendcount, sendtype, dest, sendtag, recvcount, recvtype, "
        "source, recvtag, comm, *request, t0_));",
    ),
    "isendrecv_replace": (
        "",
        "CS_BIN_TIME(cs_on_isendrecv(sets_, F, count, datatype, dest, sendtag, count, datatype, "
        "source, recvtag, comm, *request, t0_));",
    ),
    "psend_init": (
        "",
        "cs_on_persistent_init(F, CS_REQ_SEND, cs_bytes(count, datatype), dest, tag, comm, *request);",
    ),
    "precv_init": (
        "",
        "cs_on_persistent_init(F, CS_REQ_RECV, cs_bytes(count, datatype), source, tag, comm, *request);",
    ),
    "part_send_init": (
        "",
        "cs_on_persistent_init(F, CS_REQ_SEND, (long long)partitions * cs_bytes(count, datatype), dest, tag, comm, *request);",
    ),
    "part_recv_init": (
        "",
        "cs_on_persistent_init(F, CS_REQ_RECV, (long long)partitions * cs_bytes(count, datatype), source, tag, comm, *request);",
    ),
    "start": ("", "cs_on_start(F, *request, t0_);"),
    "startall": (
        "",
        "for (int i_ = 0; i_ < count; i_++) cs_on_start(F, array_of_requests[i_], t0_);",
    ),
    "probe": ("", "cs_on_probe(F, source, tag, comm, t0_);"),
    "iprobe": ("", "cs_on_probe(F, source, tag, comm, t0_);"),
    "mprobe": (
        "CS_STATUS(status);",
        "CS_BIN_TIME(cs_on_mprobe(F, source, tag, comm, status, t0_));",
    ),
    "improbe": (
        "CS_STATUS(status);",
        "if (*flag) CS_BIN_TIME(cs_on_mprobe(F, source, tag, comm, status, t0_));",
    ),
    "imrecv": ("", "cs_on_request_started(*request, CS_REQ_MRECV);"),
    "cancel": ("", "cs_on_cancel(*request);"),
    "grequest": ("", "cs_on_request_started(*request, CS_REQ_GENERALIZED);"),
    "coll": (
        "",
        "CS_BIN_TIME(cs_on_coll(F, BYTES, comm)); CS_TRACE_COLL(F, ROOT, TSENT, TRECV, comm, t0_);",
    ),
    "icoll": (
        "",
        "CS_BIN_TIME(cs_on_coll(F, BYTES, comm)); CS_ICOLL(F, *request, ROOT, TSENT, TRECV, comm, t0_);",
    ),
    "pcoll_init": ("", "CS_PCOLL_INIT(F, BYTES, 0, ROOT, TSENT, TRECV, comm, *request);"),
    "ncoll": (
        "",
        "CS_BIN_TIME(cs_on_neighbor_coll(F, SENT, RECEIVED)); CS_TRACE_COLL(F, CS_NO_ROOT, SENT, RECEIVED, comm, t0_);",
    ),
    "incoll": (
        "",
        "CS_BIN_TIME(cs_on_neighbor_coll(F, SENT, RECEIVED)); "
        "CS_ICOLL(F, *request, CS_NO_ROOT, SENT, RECEIVED, comm, t0_);",
    ),
    "pncoll_init": (
        "",
        "CS_PCOLL_INIT(F, SENT, RECEIVED, CS_NO_ROOT, SENT, RECEIVED, comm, *request);",
    ),
    "comm_new": ("", "cs_on_comm_created(F, comm, *newcomm);"),
    "comm_group": ("", "cs_on_comm_created(F, MPI_COMM_NULL, *newcomm);"),
    "comm_idup": ("", "cs_on_request_started(*request, CS_REQ_COMM);"),
    "comm_free": ("cs_on_comm_free(*comm);", ""),
    "type_free": ("cs_on_type_free();", ""),
    "win_new": ("", "cs_on_win_created(*win, comm);"),
    "win_free": ("cs_on_win_free(*win);", ""),
    "rma": (
        "",
        "CS_BIN_TIME(cs_on_rma(F, win, target_rank, CS_RMA_KIND, cs_bytes(origin_count, origin_datatype)));",
    ),
    "rrma": (
        "",
        "CS_BIN_TIME(cs_on_rma(F, win, target_rank, CS_RMA_KIND, cs_bytes(origin_count, origin_datatype))); "
        "cs_on_request_started(*request, CS_REQ_RMA);",
    ),
    "rma_getacc": (
        "",
        "CS_BIN_TIME(cs_on_get_accumulate(F, win, target_rank, op, cs_bytes(origin_count, origin_datatype), "
        "cs_bytes(result_count, result_datatype)));",
    ),
    "rrma_getacc": (
        "",
        "CS_BIN_TIME(cs_on_get_accumulate(F, win, target_rank, op, cs_bytes(origin_count, origin_datatype), "
        "cs_bytes(result_count, result_datatype))); cs_on_request_started(*request, CS_REQ_RMA);",
    ),
    "rma_fetch": (
        "",
        "CS_BIN_TIME(cs_on_get_accumulate(F, win, target_rank, CS_OP_OF, cs_bytes(1, datatype), cs_bytes(1, datatype)));",
    ),
    "file_open": ("", "cs_on_file_open(filename, *fh);"),
    "file_close": ("cs_on_file_close(*fh);", ""),
    "io_read": (
        "CS_STATUS(status);",
        "CS_BIN_TIME(cs_on_io(F, fh, CS_IO_READ, cs_status_bytes(status)));",
    ),
    "io_write": ("", "CS_BIN_TIME(cs_on_io(F, fh, CS_IO_WRITE, cs_bytes(count, datatype)));"),
    "io_iread": ("", "cs_on_io_iread(F, fh, *request);"),
    "io_iwrite": (
        "",
        "CS_BIN_TIME(cs_on_io(F, fh, CS_IO_WRITE, cs_bytes(count, datatype))); "
        "cs_on_request_started(*request, CS_REQ_FILE);",
    ),
    "io_read_end": (
        "CS_STATUS(status);",
        "CS_BIN_TIME(cs_on_io(F, fh, CS_IO_READ, cs_status_bytes(status)));",
    ),
    "io_write_begin": ("", "CS_BIN_TIME(cs_on_io(F, fh, CS_IO_WRITE, cs_bytes(count, datatype)));"),
    "calls": ("", ""),
}
# What the event trace records of a collective (--trace; docs/profile.md): its root
# (-1: none) and the bytes this rank sent and received, from its own buffers: a root
# sends what its send buffer holds for all ranks, every rank receives what lands in
# its receive buffer.  In place: the receive side's count stands for the send side.
# CS_NO_ROOT: a collective without a root.
# By the blocking function's name; its nonblocking, persistent and _c forms share it.
# R: this rank is the root; N: the size of the group peers are named in.
_R = "cs_coll_is_root(comm, root)"
_N = "(long long)cs_coll_size(comm)"
_SUM = "cs_vbytes(MPI_IN_PLACE, {c}, {t}, {c}, {t}, comm)"  # sum of a count array
_OWN = "(recvbuf == MPI_IN_PLACE ? 0 : cs_bytes(recvcount, recvtype))"
COLL_TRACE = {
    "MPI_Barrier": ("CS_NO_ROOT", "0", "0"),
    "MPI_Bcast": (
        "root",
        f"({_R} ? cs_bytes(count, datatype) : 0)",
        f"({_R} ? 0 : cs_bytes(count, datatype))",
    ),
    "MPI_Reduce": ("root", "cs_bytes(count, datatype)", f"({_R} ? cs_bytes(count, datatype) : 0)"),
    "MPI_Allreduce": ("CS_NO_ROOT", "cs_bytes(count, datatype)", "cs_bytes(count, datatype)"),
    "MPI_Gather": (
        "root",
        "cs_bytes_inplace(sendbuf, sendcount, sendtype, recvcount, recvtype)",
        f"({_R} ? {_N} * cs_bytes(recvcount, recvtype) : 0)",
    ),
    "MPI_Gatherv": (
        "root",
        "(sendbuf == MPI_IN_PLACE ? 0 : cs_bytes(sendcount, sendtype))",
        f"({_R} ? {_SUM.format(c='recvcounts', t='recvtype')} : 0)",
    ),
    "MPI_Scatter": ("root", f"({_R} ? {_N} * cs_bytes(sendcount, sendtype) : 0)", _OWN),
    "MPI_Scatterv": ("root", f"({_R} ? {_SUM.format(c='sendcounts', t='sendtype')} : 0)", _OWN),
    "MPI_Allgather": (
        "CS_NO_ROOT",
        "cs_bytes_inplace(sendbuf, sendcount, sendtype, recvcount, recvtype)",
        f"{_N} * cs_bytes(recvcount, recvtype)",
    ),
    "MPI_Allgatherv": (
        "CS_NO_ROOT",
        "(sendbuf == MPI_IN_PLACE ? 0 : cs_bytes(sendcount, sendtype))",
        _SUM.format(c="recvcounts", t="recvtype"),
    ),
    "MPI_Alltoall": (
        "CS_NO_ROOT",
        f"{_N} * cs_bytes_inplace(sendbuf, sendcount, sendtype, recvcount, recvtype)",
        f"{_N} * cs_bytes(recvcount, recvtype)",
    ),
    "MPI_Alltoallv": (
        "CS_NO_ROOT",
        "cs_vbytes(sendbuf, sendcounts, sendtype, recvcounts, recvtype, comm)",
        _SUM.format(c="recvcounts", t="recvtype"),
    ),
    "MPI_Alltoallw": (
        "CS_NO_ROOT",
        "cs_wbytes(sendbuf, sendcounts, sendtypes, recvcounts, recvtypes, comm)",
        "cs_wbytes(MPI_IN_PLACE, recvcounts, recvtypes, recvcounts, recvtypes, comm)",
    ),
    "MPI_Reduce_scatter": (
        "CS_NO_ROOT",
        _SUM.format(c="recvcounts", t="datatype"),
        "cs_bytes(recvcounts[cs_coll_rank(comm)], datatype)",
    ),
    "MPI_Reduce_scatter_block": (
        "CS_NO_ROOT",
        f"{_N} * cs_bytes(recvcount, datatype)",
        "cs_bytes(recvcount, datatype)",
    ),
    "MPI_Scan": ("CS_NO_ROOT", "cs_bytes(count, datatype)", "cs_bytes(count, datatype)"),
    "MPI_Exscan": ("CS_NO_ROOT", "cs_bytes(count, datatype)", "cs_bytes(count, datatype)"),
}

# Categories whose calls move data: they get a row of power-of-two size bins.
SIZED = {
    "send",
    "isend",
    "recv",
    "irecv",
    "sendrecv",
    "sendrecv_replace",
    "isendrecv",
    "isendrecv_replace",
    "psend_init",
    "precv_init",
    "part_send_init",
    "part_recv_init",
    "mprobe",
    "improbe",
    "coll",
    "icoll",
    "pcoll_init",
    "ncoll",
    "incoll",
    "pncoll_init",
    "rma",
    "rrma",
    "rma_getacc",
    "rrma_getacc",
    "rma_fetch",
    "io_read",
    "io_write",
    "io_iread",
    "io_iwrite",
    "io_read_end",
    "io_write_begin",
}
COLLECTIVE = {"coll", "icoll", "pcoll_init", "ncoll", "incoll", "pncoll_init"}
# Fortran view of a C parameter that the generic Fortran wrapper cannot give (the
# functions that have one are counted through C only, or by hand).
NO_FORTRAN = re.compile(r"\*\*|\[\]\s*\[|char\s*\*\s*\w*\s*\[|function|\.\.\.")


# ---- the list -------------------------------------------------------------------


def _param_name(param):
    m = re.search(r"(\w+)\s*(\[\s*\])?\s*$", param.strip())
    return m.group(1) if m else "..."


def _derive(name, params, category):
    """The nonblocking and persistent forms of a blocking collective."""
    inonblocking, persistent = DERIVED[category]
    stem = name[len("MPI_") :]
    return [
        (inonblocking, f"MPI_I{stem[0].lower()}{stem[1:]}", params + ", MPI_Request *request"),
        (persistent, f"{name}_init", params + ", MPI_Info info, MPI_Request *request"),
    ]


def parse():
    """The base list: dicts of name, category, params (canonical C), extra."""
    funcs = []
    for line in FUNCTIONS.strip().splitlines():
        if line.startswith("#"):
            continue
        category, extra, proto = (part.strip() for part in line.split("|"))
        m = re.fullmatch(r"(MPI_\w+)\((.*)\)", proto)
        name, params = m.group(1), m.group(2)
        entries = [(category, name, params)]
        if category in DERIVED:
            entries += _derive(name, params, category)
        for cat, fname, fparams in entries:
            funcs.append(dict(name=fname, category=cat, params=fparams, extra=extra, base=name))
    return funcs


# ---- what the MPI declares -----------------------------------------------------


def mpi_header(mpicc):
    """The MPI's mpi.h, preprocessed by its own compiler wrapper."""
    proc = subprocess.run(
        [mpicc, "-E", "-x", "c", "-"], input="#include <mpi.h>\n", capture_output=True, text=True
    )
    if proc.returncode != 0:
        sys.exit(f"mpi_functions.py: {mpicc} cannot preprocess mpi.h:\n{proc.stderr}")
    return proc.stdout


def fortran_libraries(mpicc):
    """The Fortran binding libraries beside the MPI's libmpi (none for the wheels).
    Open MPI answers --showme:link, MPICH -show; each has its own library names (and
    Debian puts both MPIs' libraries in one directory)."""
    for flag, names in (
        ("--showme:link", ("libmpi_mpifh.so", "libmpi_usempif08.so")),
        ("-show", ("libmpifort.so", "libmpichfort.so")),
    ):
        try:
            proc = subprocess.run([mpicc, flag], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if proc.returncode != 0 or not proc.stdout.strip():
            continue
        words = proc.stdout.split()
        libdirs = [w[2:] for w in words if w.startswith("-L")]
        libdirs += [w[len("-Wl,-rpath,") :] for w in words if w.startswith("-Wl,-rpath,")]
        return sorted({str(Path(d) / n) for d in libdirs for n in names if (Path(d) / n).exists()})
    return []


def header_prototypes(text):
    """{name: [param type+name strings]} of every ``int PMPI_x(...)`` in a preprocessed mpi.h."""
    text = re.sub(r"^#.*$", "", text, flags=re.M)
    protos = {}
    for m in re.finditer(r"\bint\s+PMPI_(\w+)\s*\(([^()]*)\)", text):
        params = " ".join(m.group(2).split())
        protos["MPI_" + m.group(1)] = (
            [] if params in ("", "void") else [p.strip() for p in params.split(",")]
        )
    return protos


def _split_param(param):
    """(type text, name, array suffix) of a declared parameter; name '' when unnamed."""
    m = re.fullmatch(r"(.*?)(\b\w+)?\s*(\[\s*\])?", param.strip())
    typ, name, arr = m.group(1).strip(), m.group(2) or "", m.group(3) or ""
    if (
        not typ
        or name in ("int", "char", "void", "double", "long")
        or (name.startswith("MPI_") and not typ.replace("const", "").strip())
    ):
        typ, name = (typ + " " + name).strip(), ""
    return typ, name, arr


def adopt_header(funcs, protos):
    """Keep the functions the MPI declares, with its parameter types and our names;
    add each one's ``_c`` large-count variant when declared.  Returns (kept, left_out)."""
    kept, left_out = [], []
    for f in funcs:
        for variant in [f["name"], f["name"] + "_c"] if f["category"] != "hand" else [f["name"]]:
            if protos is None:
                if variant == f["name"]:
                    kept.append(dict(f))
                continue
            if variant not in protos:
                if variant == f["name"]:
                    left_out.append(variant)
                continue
            ours = [] if f["params"] == "void" else [p.strip() for p in f["params"].split(",")]
            theirs = protos[variant]
            if len(ours) != len(theirs) or f["category"] == "hand":
                if f["category"] == "hand" or variant == f["name"] + "_c":
                    kept.append(dict(f)) if f["category"] == "hand" else None
                else:
                    left_out.append(f"{variant} (parameters differ)")
                continue
            params = []
            for mine, decl in zip(ours, theirs):
                typ, _, arr = _split_param(decl)
                params.append(f"{typ} {_param_name(mine)}{arr}".replace("* ", "*"))
            kept.append(dict(f, name=variant, params=", ".join(params) or "void"))
    return kept, left_out


def finish(funcs):
    """Argument names, size-bin and collective-bin rows (one per function: a ``_c``
    variant has rows of its own, so calls of the two forms stay apart)."""
    rows, colls = {}, {}
    for f in funcs:
        f["args"] = (
            [] if f["params"] == "void" else [_param_name(p) for p in f["params"].split(",")]
        )
        f["sized"] = f["category"] in SIZED
        f["collective"] = f["category"] in COLLECTIVE
        f["bin_index"] = rows.setdefault(f["name"], len(rows)) if f["sized"] else -1
        f["coll_index"] = colls.setdefault(f["name"], len(colls)) if f["collective"] else -1
    return funcs, len(rows), len(colls)


# ---- C -------------------------------------------------------------------------


def header(funcs, nsized, ncoll, f77, f08):
    out = [
        "/* Generated by mpi_functions.py: function ids and names, and which functions",
        " * this MPI has (CS_HAVE_<name>). */",
        "#ifndef CS_FUNCTIONS_H",
        "#define CS_FUNCTIONS_H",
        *[f"#define CS_HAVE_{f['name']} 1" for f in funcs],
        *(["#define CS_FORTRAN_F77 1  /* the MPI's mpif.h layer bypasses MPI_* */"] if f77 else []),
        *(
            ["#define CS_FORTRAN_F08 1  /* its mpi_f08 layer does, for some calls */"]
            if f08
            else []
        ),
        "enum {",
    ]
    out += [f"    CS_F_{f['name']}," for f in funcs]
    out += [
        "    CS_NFUNC",
        "};",
        f"#define CS_NSIZED {max(nsized, 1)}",
        f"#define CS_NCOLL {max(ncoll, 1)}",
        "extern const char *const cs_function_names[CS_NFUNC];",
        "/* Rows per function, static so that a wrapper's row (its function id is a",
        " * constant) is a constant too. */",
        "static const int cs_function_bin[CS_NFUNC] = {  /* size-bin row, -1: none */",
        "    " + ", ".join(str(f["bin_index"]) for f in funcs) + "};",
        "static const int cs_function_coll[CS_NFUNC] = {  /* collective-bin row, -1: none */",
        "    " + ", ".join(str(f["coll_index"]) for f in funcs) + "};",
        "#endif",
    ]
    return "\n".join(out) + "\n"


def _post(f):
    pre, post = HOOKS[f["category"]]
    extra = f["extra"]
    sent, _, received = extra.partition(";")
    root, tsent, trecv = COLL_TRACE.get(f.get("base"), ("CS_NO_ROOT", "0", "0"))
    post = re.sub(r"\bROOT\b", root, post).replace("TSENT", tsent).replace("TRECV", trecv)
    post = (
        post.replace("BYTES", extra or "0")
        .replace("SENT", sent.strip())
        .replace("RECEIVED", received.strip())
        .replace("CS_RMA_KIND", f"CS_RMA_{extra}")
        .replace("CS_OP_OF", "op" if "Fetch" in f["name"] else "MPI_REPLACE")
    )
    post = re.sub(r"\bF\b", f"CS_F_{f['name']}", post)
    return pre, post


def wrappers(funcs):
    out = [
        "/* Generated by mpi_functions.py: one PMPI wrapper per MPI function. */",
        '#include "cs_prof_hooks.h"',
        "",
        "const char *const cs_function_names[CS_NFUNC] = {",
        *[f'    "{f["name"]}",' for f in funcs],
        "};",
        "",
    ]
    for f in funcs:
        if f["category"] == "hand":
            continue
        pre, post = _post(f)
        fid, name, args = f"CS_F_{f['name']}", f["name"], f["args"]
        body = [
            *([f"    {pre}"] if pre else []),
            f"    int rc_ = P{name}({', '.join(args)});",
            *([f"    if (rc_ == MPI_SUCCESS) {{ {post} }}"] if post else []),
        ]
        # Two paths (cs_prof_hooks.h): the fast one, when neither the trace nor call
        # sites are on (the hooks get sets_ with those bits known clear, so their
        # branches fold away), and the full one.
        out += [
            f"CS_EXPORT int {name}({f['params']})",
            "{",
            f"    CS_BEGIN({fid});",
            "    if (__builtin_expect((sets_ & CS_SETS_SLOW) != 0, 0)) {",
            f"        CS_FULL_ENTER({fid}, __builtin_return_address(0));",
            *["    " + x for x in body],
            f"        CS_LEAVE({fid});",
            "        return rc_;",
            "    }",
            f"    CS_FAST_ENTER({fid});",
            *body,
            f"    CS_FAST_END({fid});",
            "    return rc_;",
            "}",
            "",
        ]
    return "\n".join(out)


# ---- Fortran -------------------------------------------------------------------

HANDLES = {
    "MPI_Comm": "Comm",
    "MPI_Datatype": "Type",
    "MPI_Op": "Op",
    "MPI_Info": "Info",
    "MPI_Win": "Win",
    "MPI_File": "File",
    "MPI_Group": "Group",
    "MPI_Request": "Request",
    "MPI_Message": "Message",
    "MPI_Errhandler": "Errhandler",
    "MPI_Session": "Session",
}


def fortran_params(f):
    """[(fortran declaration, name, kind, C type)] or None when the generic wrapper
    cannot view this function's arguments."""
    if NO_FORTRAN.search(f["params"]) or f["params"] == "void":
        return None
    out = []
    for p in f["params"].split(","):
        typ, _, arr = _split_param(p)
        name = _param_name(p)
        base = typ.replace("const", "").strip()
        if "void" in base:
            out.append((f"void *{name}", name, "buffer", typ.replace("*", "").strip()))
        elif base.rstrip("*").strip() == "char":
            out.append((f"char *{name}", name, "string", base))
        elif base in HANDLES:
            out.append((f"MPI_Fint *{name}", name, "handle_array" if arr else "handle", base))
        elif base.rstrip(" *") in HANDLES and base.endswith("*"):
            out.append((f"MPI_Fint *{name}", name, "handle_out", base.rstrip(" *")))
        elif base == "MPI_Status *":
            out.append((f"MPI_Fint *{name}", name, "status", base))
        elif base in ("int", "int *"):
            kind = "int_array" if arr else ("int_out" if base == "int *" else "int")
            out.append((f"MPI_Fint *{name}", name, kind, "int"))
        elif base in ("MPI_Aint", "MPI_Offset", "MPI_Count"):
            out.append((f"{base} *{name}", name, "array" if arr else "scalar", base))
        else:
            return None
    return out


def fortran_wrapper(f, routes):
    """C source of the Fortran wrappers of ``f`` for each of ``routes``
    ([(our symbols, the MPI's symbol)]), or "" when it has none."""
    params = fortran_params(f)
    if params is None or (f["category"] == "hand"):
        return ""
    pre, post = _post(f)
    fid = f"CS_F_{f['name']}"
    decl = [d for d, *_ in params] + ["MPI_Fint *ierr"]
    decl += [f"size_t {n}_len" for _, n, k, _ in params if k == "string"]
    fargs = (
        [n for _, n, *_ in params]
        + ["ierr_"]
        + [f"{n}_len" for _, n, k, _ in params if k == "string"]
    )
    views, arrays, after = [], [], []
    for _, n, kind, ctype in params:
        if kind == "buffer":  # ctype: "void" or "const void"
            views.append(f"{ctype} *{n}_c = cs_fortran_buffer({n});")
        elif kind == "string":
            views.append(f"char {n}_c[1024]; cs_fortran_string({n}_c, sizeof {n}_c, {n}, {n}_len);")
        elif kind == "handle":
            views.append(f"{ctype} {n}_c = PMPI_{HANDLES[ctype]}_f2c(*{n});")
        elif kind == "handle_array" and ctype == "MPI_Request":  # MPI_Startall
            arrays.append(f"MPI_Request *{n}_c = cs_fortran_requests({n}, count_c);")
        elif kind == "handle_array":  # datatypes of the w collectives: after comm_c
            arrays.append(
                f"MPI_Datatype *{n}_c = cs_fortran_types({n}, comm_c, "
                f"{'CS_IN' if n.startswith('recv') else 'CS_OUT'}, {int('Neighbor' in f['name'])});"
            )
        elif kind == "handle_out":
            views.append(
                f"{ctype} {n}_v = PMPI_{HANDLES[ctype]}_f2c(*{n}); {ctype} *{n}_c = &{n}_v;"
            )
            after.append(f"{n}_v = PMPI_{HANDLES[ctype]}_f2c(*{n});")
        elif kind == "status":
            views.append(
                f"MPI_Fint {n}_own[CS_FSTATUS_WORDS]; MPI_Status {n}_v; MPI_Status *{n}_c = &{n}_v;"
            )
            views.append(f"if (cs_fortran_status_ignored({n})) {n} = {n}_own;")
            after.append(f"PMPI_Status_f2c({n}, &{n}_v);")
        elif kind == "int":
            views.append(f"int {n}_c = (int)*{n};")
        elif kind == "int_out":
            views.append(f"int {n}_v = 0; int *{n}_c = &{n}_v;")
            after.append(f"{n}_v = (int)*{n};")
        elif kind == "int_array":
            views.append(f"const int *{n}_c = (const int *){n};")
        elif kind == "scalar":
            views.append(f"{ctype} {n}_c = *{n};")
        elif kind == "array":
            views.append(f"const {ctype} *{n}_c = {n};")
    views += arrays
    c_pre, c_post = pre, post
    for _, n, *_ in params:  # the hooks use the canonical names: point them at the C views
        c_pre = re.sub(rf"\b{n}\b", f"{n}_c", c_pre)
        c_post = re.sub(rf"\b{n}\b", f"{n}_c", c_post)
    frees = [f"free({n}_c);" for _, n, kind, _ in params if kind == "handle_array"]
    out = [f"typedef void cs_ft_{f['name']}({', '.join(decl)});"]
    for ours, theirs, how in routes:
        if how == "pmpi":  # the MPI's profiling entry point, by name
            out.append(f"extern cs_ft_{f['name']} {theirs} __attribute__((weak));")
            call = theirs
        else:  # no pmpi_ name (MPICH's mpi_f08): the MPI's own entry point after ours
            call = "real_"
        out += [
            f"CS_EXPORT void {ours[0]}({', '.join(decl)})",
            "{",
            *(
                [
                    f"    static cs_ft_{f['name']} *real_;",
                    f'    if (!real_) real_ = (cs_ft_{f["name"]} *)cs_fortran_next("{theirs}");',
                ]
                if how == "next"
                else []
            ),
            "    MPI_Fint ierr_own = 0, *ierr_ = ierr ? ierr : &ierr_own; /* f08: ierror is optional */",
            f"    CS_FORTRAN_ENTER({fid});",
            *[f"    {v}" for v in views],
            *([f"    {c_pre}"] if c_pre else []),
            f"    {call}({', '.join(fargs)});",
            f"    int mine_ = CS_FORTRAN_MINE({fid});",
            "    if (mine_ && *ierr_ == MPI_SUCCESS) {",
            *[f"        {a}" for a in after],
            *([f"        {c_post}"] if c_post else []),
            "    }",
            *[f"    {x}" for x in frees],
            f"    CS_FORTRAN_LEAVE({fid}, mine_);",
            "}",
        ]
        out += [
            f'CS_EXPORT void {alias}({", ".join(decl)}) __attribute__((alias("{ours[0]}")));'
            for alias in ours[1:]
        ]
        out.append("")
    return "\n".join(out)


def fortran_symbols(libs):
    """The Fortran entry points the MPI's Fortran libraries define, and whether
    their mpif.h layer calls the C MPI_* functions (then C wrappers see Fortran)."""
    defined, undefined = set(), set()
    for lib in libs:
        for flag, into in (("--defined-only", defined), ("--undefined-only", undefined)):
            try:
                out = subprocess.run(
                    ["nm", "-D", flag, lib], capture_output=True, text=True, check=True
                ).stdout
            except (OSError, subprocess.CalledProcessError):
                continue
            into.update(line.split()[-1] for line in out.splitlines() if line.strip())
    through_c = "MPI_Send" in undefined and "PMPI_Send" not in undefined
    return defined, through_c


def fortran_routes(f, defined, f77):
    """[(our symbol names, the MPI's symbol, "pmpi" or "next")] for f's Fortran entry
    points: the mpif.h ones (when ``f77``: that layer bypasses the C MPI_*) and the
    mpi_f08 one, forwarded to its pmpi_ name, or else to the MPI's own after ours."""
    low = f["name"].lower()
    routes = []
    manglings = [m for m in (low + "_", low + "__", low, f["name"].upper()) if m in defined]
    pm = [p for p in ("p" + low + "_", "p" + low + "__", "p" + low) if p in defined]
    if f77 and manglings and pm:
        routes.append((manglings, pm[0], "pmpi"))
    if low + "_f08_" in defined:
        pmpi08 = "p" + low + "_f08_" in defined
        routes.append(
            ([low + "_f08_"], ("p" if pmpi08 else "") + low + "_f08_", "pmpi" if pmpi08 else "next")
        )
    return routes


def fortran_source(funcs, defined, f77):
    out = [
        "/* Generated by mpi_functions.py: Fortran wrappers for the Fortran entry points",
        " * that bypass the C MPI_* functions (see cs_prof_fortran.h). */",
        '#include "cs_prof_fortran.h"',
        "",
    ]
    count = 0
    for f in funcs:
        routes = fortran_routes(f, defined, f77)
        src = fortran_wrapper(f, routes) if routes else ""
        if src:
            out.append(src)
            count += 1
    out.insert(3, f"/* {count} functions */")
    return "\n".join(out) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--mpicc",
        help="the MPI's C compiler wrapper: its mpi.h says which functions "
        "the MPI has, its link line where its Fortran libraries are",
    )
    ap.add_argument("--header", help="a preprocessed mpi.h instead of --mpicc's")
    ap.add_argument("--fortran-lib", action="append", default=[])
    args = ap.parse_args(argv[1:])
    text = (
        Path(args.header).read_text()
        if args.header
        else mpi_header(args.mpicc)
        if args.mpicc
        else None
    )
    protos = header_prototypes(text) if text is not None else None
    if args.mpicc:
        args.fortran_lib += fortran_libraries(args.mpicc)
    funcs, left_out = adopt_header(parse(), protos)
    funcs, nsized, ncoll = finish(funcs)
    if args.json:
        keys = ("name", "category", "sized", "collective", "bin_index", "coll_index")
        print(json.dumps([{k: f[k] for k in keys} for f in funcs], indent=1))
        return 0
    outdir = Path(args.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    defined, through_c = fortran_symbols(args.fortran_lib)
    f77 = bool(defined) and not through_c
    f08 = any(name.endswith("_f08_") for name in defined)
    fortran = fortran_source(funcs, defined, f77) if f77 or f08 else ""
    route = {
        "mpif.h and use mpi": "Fortran wrappers" if f77 else "C wrappers" if defined else "none",
        "use mpi_f08": "Fortran wrappers" if f08 else "C wrappers" if defined else "none",
    }
    files = {
        "cs_functions.h": header(funcs, nsized, ncoll, f77, f08),
        "cs_wrappers.c": wrappers(funcs),
        "cs_fortran_wrappers.c": fortran or "/* no Fortran wrappers for this MPI */\n",
        "wrapped.txt": "".join(f"{f['name']}\n" for f in funcs),
        "left_out.txt": "".join(f"{n}\n" for n in left_out),
        "fortran_route.txt": "".join(f"{k}: {v}\n" for k, v in route.items()),
    }
    for name, text in files.items():
        (outdir / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
