#!/usr/bin/env python3
"""The MPI functions commscope's profiling library wraps, and the wrapper generator.

One line per function: ``category | bytes expression | prototype``.  The category
picks what the wrapper counts (see HOOKS); ``hand`` functions are written by hand
in cs_prof_complete.c / cs_prof_init.c and only get their function id here.
Prototypes use canonical parameter names (``newcomm`` for every new communicator,
``request`` for the returned request) so one hook template fits a whole family.

    python3 mpi_functions.py OUTDIR      writes OUTDIR/cs_functions.h and cs_wrappers.c
    python3 mpi_functions.py --json      the function table (name, category, sized, collective)

Left out on purpose: one-sided (RMA), MPI-IO, neighbourhood and persistent
collectives, the MPI-4 large-count ``_c`` variants and MPI_Pready_list (its
prototype's const differs between Open MPI and MPICH).
"""

import json
import re
import sys
from pathlib import Path

FUNCTIONS = r"""
hand     |                                  | MPI_Init(int *argc, char ***argv)
hand     |                                  | MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
hand     |                                  | MPI_Finalize(void)
hand     |                                  | MPI_Pcontrol(const int level, ...)
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
psend_init |                                | MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)
psend_init |                                | MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)
psend_init |                                | MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)
psend_init |                                | MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request)
precv_init |                                | MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request)
part_send_init | partitioned                | MPI_Psend_init(const void *buf, int partitions, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request)
part_recv_init | partitioned                | MPI_Precv_init(void *buf, int partitions, MPI_Count count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request)
calls    | partitioned                      | MPI_Pready(int partition, MPI_Request request)
calls    | partitioned                      | MPI_Pready_range(int partition_low, int partition_high, MPI_Request request)
calls    | partitioned                      | MPI_Parrived(MPI_Request request, int partition, int *flag)
start    |                                  | MPI_Start(MPI_Request *request)
startall |                                  | MPI_Startall(int count, MPI_Request array_of_requests[])
probe    |                                  | MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
iprobe   |                                  | MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
probe    |                                  | MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
iprobe   |                                  | MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status)
mrecv    |                                  | MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status)
imrecv   |                                  | MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request)
hand     |                                  | MPI_Wait(MPI_Request *request, MPI_Status *status)
hand     |                                  | MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
hand     |                                  | MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
hand     |                                  | MPI_Testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[])
hand     |                                  | MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status)
hand     |                                  | MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status)
hand     |                                  | MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[], MPI_Status array_of_statuses[])
hand     |                                  | MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[], MPI_Status array_of_statuses[])
hand     |                                  | MPI_Request_free(MPI_Request *request)
calls    |                                  | MPI_Cancel(MPI_Request *request)
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
coll     | cs_vbytes(NULL, recvcounts, datatype, NULL, datatype, comm) | MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
coll     | cs_bytes(recvcount, datatype)    | MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
coll     | cs_bytes(count, datatype)        | MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
coll     | cs_bytes(count, datatype)        | MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
icoll    | 0                                | MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
icoll    | cs_bytes(count, datatype)        | MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request)
icoll    | cs_bytes(count, datatype)        | MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm, MPI_Request *request)
icoll    | cs_bytes(count, datatype)        | MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
icoll    | cs_bytes_inplace(sendbuf, sendcount, sendtype, recvcount, recvtype) | MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
icoll    | cs_bytes_inplace(sendbuf, sendcount, sendtype, 0, recvtype) | MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
icoll    | cs_bytes(recvcount, recvtype)    | MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
icoll    | cs_bytes(recvcount, recvtype)    | MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
icoll    | cs_bytes_inplace(sendbuf, sendcount, sendtype, recvcount, recvtype) | MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
icoll    | cs_bytes_inplace(sendbuf, sendcount, sendtype, 0, recvtype) | MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
icoll    | cs_bytes_inplace(sendbuf, sendcount, sendtype, recvcount, recvtype) | MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
icoll    | cs_vbytes(sendbuf, sendcounts, sendtype, recvcounts, recvtype, comm) | MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
icoll    | cs_bytes(count, datatype)        | MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
icoll    | cs_bytes(count, datatype)        | MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
icoll    | cs_bytes(recvcount, datatype)    | MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
comm_new |                                  | MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
comm_new |                                  | MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
calls    |                                  | MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
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
comm_free |                                 | MPI_Comm_free(MPI_Comm *comm)
comm_free |                                 | MPI_Comm_disconnect(MPI_Comm *comm)
type_free |                                 | MPI_Type_free(MPI_Datatype *datatype)
"""

# What each category's wrapper does around the PMPI call.  F is the function id,
# t0_ the entry time (0 unless timers or the trace are on).
HOOKS = {
    "send": ("", "cs_on_send(F, count, datatype, dest, tag, comm, t0_);"),
    "isend": ("", "cs_on_isend(F, count, datatype, dest, tag, comm, *request, t0_);"),
    "recv": ("CS_STATUS(status);", "cs_on_recv(F, source, tag, comm, status, t0_);"),
    "irecv": ("", "cs_on_irecv(F, count, datatype, source, tag, comm, *request, t0_);"),
    "sendrecv": ("CS_STATUS(status);",
                 "cs_on_send(F, sendcount, sendtype, dest, sendtag, comm, t0_); "
                 "cs_on_recv(F, source, recvtag, comm, status, t0_);"),
    "sendrecv_replace": ("CS_STATUS(status);",
                         "cs_on_send(F, count, datatype, dest, sendtag, comm, t0_); "
                         "cs_on_recv(F, source, recvtag, comm, status, t0_);"),
    "psend_init": ("", "cs_on_persistent_init(F, CS_REQ_SEND, cs_bytes(count, datatype), dest, tag, comm, *request);"),
    "precv_init": ("", "cs_on_persistent_init(F, CS_REQ_RECV, cs_bytes(count, datatype), source, tag, comm, *request);"),
    "part_send_init": ("", "cs_on_persistent_init(F, CS_REQ_SEND, (long long)partitions * cs_bytes(count, datatype), dest, tag, comm, *request);"),
    "part_recv_init": ("", "cs_on_persistent_init(F, CS_REQ_RECV, (long long)partitions * cs_bytes(count, datatype), source, tag, comm, *request);"),
    "start": ("", "cs_on_start(F, *request, t0_);"),
    "startall": ("", "for (int i_ = 0; i_ < count; i_++) cs_on_start(F, array_of_requests[i_], t0_);"),
    "probe": ("CS_STATUS(status);", "cs_on_probe(F, source, tag, comm, t0_);"),
    "iprobe": ("", "cs_on_probe(F, source, tag, comm, t0_);"),
    "mrecv": ("CS_STATUS(status);", "cs_on_recv(F, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_NULL, status, t0_);"),
    "imrecv": ("", "cs_on_irecv(F, count, datatype, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_NULL, *request, t0_);"),
    "coll": ("", "cs_on_coll(F, BYTES, comm);"),
    "icoll": ("", "cs_on_coll(F, BYTES, comm); cs_on_request_started(*request, CS_REQ_COLL);"),
    "comm_new": ("", "cs_on_comm_created(F, comm, *newcomm);"),
    "comm_free": ("cs_on_comm_free(*comm);", ""),
    "type_free": ("cs_on_type_free();", ""),
    "calls": ("", ""),
}
SIZED = {"send", "isend", "recv", "irecv", "sendrecv", "sendrecv_replace", "psend_init",
         "precv_init", "part_send_init", "part_recv_init", "mrecv", "imrecv", "coll", "icoll"}
COLLECTIVE = {"coll", "icoll"}


def parse():
    funcs = []
    for line in FUNCTIONS.strip().splitlines():
        category, extra, proto = (part.strip() for part in line.split("|"))
        m = re.fullmatch(r"(MPI_\w+)\((.*)\)", proto)
        name, params = m.group(1), m.group(2)
        args = [] if params == "void" else [  # (hand-written variadics have no PMPI call here)
            re.search(r"(\w+|\.\.\.)\s*(\[\])?$", p.strip()).group(1) for p in params.split(",")]
        funcs.append(dict(name=name, category=category, params=params, args=args,
                          guard="COMMSCOPE_HAVE_PARTITIONED" if extra == "partitioned" else None,
                          bytes=extra if category in COLLECTIVE else None,
                          sized=category in SIZED, collective=category in COLLECTIVE))
    sized = [f for f in funcs if f["sized"]]
    colls = [f for f in funcs if f["collective"]]
    for f in funcs:
        f["bin_index"] = sized.index(f) if f["sized"] else -1
        f["coll_index"] = colls.index(f) if f["collective"] else -1
    return funcs


def header(funcs):
    out = ["/* Generated by mpi_functions.py: function ids and names. */",
           "#ifndef CS_FUNCTIONS_H", "#define CS_FUNCTIONS_H", "enum {"]
    out += [f"    CS_F_{f['name']}," for f in funcs]
    out += ["    CS_NFUNC", "};",
            f"#define CS_NSIZED {sum(f['sized'] for f in funcs)}",
            f"#define CS_NCOLL {sum(f['collective'] for f in funcs)}",
            "extern const char *const cs_function_names[CS_NFUNC];",
            "extern const int cs_function_bin[CS_NFUNC];   /* size-bin row, -1: none */",
            "extern const int cs_function_coll[CS_NFUNC];  /* collective-bin row, -1: none */",
            "#endif"]
    return "\n".join(out) + "\n"


def wrappers(funcs):
    out = ["/* Generated by mpi_functions.py: one PMPI wrapper per MPI function. */",
           '#include "cs_prof_hooks.h"', "",
           "const char *const cs_function_names[CS_NFUNC] = {",
           *[f'    "{f["name"]}",' for f in funcs], "};",
           "const int cs_function_bin[CS_NFUNC] = {" + ", ".join(str(f["bin_index"]) for f in funcs) + "};",
           "const int cs_function_coll[CS_NFUNC] = {" + ", ".join(str(f["coll_index"]) for f in funcs) + "};",
           ""]
    for f in funcs:
        if f["category"] == "hand":
            continue
        pre, post = HOOKS[f["category"]]
        fid = f"CS_F_{f['name']}"
        post = post.replace("BYTES", f["bytes"] or "0").replace("(F,", f"({fid},")
        if f["guard"]:
            out.append(f"#ifdef {f['guard']}")
        out += [f"CS_EXPORT int {f['name']}({f['params']})", "{",
                f"    CS_ENTER({fid});",
                *( [f"    {pre}"] if pre else []),
                f"    int rc_ = P{f['name']}({', '.join(f['args'])});",
                *( [f"    if (rc_ == MPI_SUCCESS) {{ {post} }}"] if post else []),
                f"    CS_LEAVE({fid});",
                "    return rc_;", "}"]
        if f["guard"]:
            out.append("#endif")
        out.append("")
    return "\n".join(out)


def main(argv):
    funcs = parse()
    if argv[1:] == ["--json"]:
        keys = ("name", "category", "sized", "collective", "bin_index", "coll_index")
        print(json.dumps([{k: f[k] for k in keys} for f in funcs], indent=1))
        return 0
    outdir = Path(argv[1])
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "cs_functions.h").write_text(header(funcs))
    (outdir / "cs_wrappers.c").write_text(wrappers(funcs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
