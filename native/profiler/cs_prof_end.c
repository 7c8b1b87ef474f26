/* How a profiled process ends, in its rank header (end_how, end_code, end_ns), so that
 * `commscope profile` can name the rank that crashed and how, whatever the launcher
 * says (MPICH's hydra says nothing about which rank died):
 *
 *   CS_END_ABORT   MPI_Abort(comm, code) was called (the wrapper below, before PMPI_Abort)
 *   CS_END_SIGNAL  a signal whose action ends the process arrived (the handler records
 *                  it, puts the previous action back and lets the signal take its course)
 *   CS_END_EXIT    the process called exit() or returned from main (glibc's on_exit
 *                  gives the status), with or without MPI_Finalize before it
 *
 * Nothing is recorded for SIGKILL (it cannot be caught) or _exit(). The first ending
 * recorded is kept: an MPI_Abort that then exits stays an abort. Signals that the program
 * handles or ignores itself are left alone, except the faults (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL, SIGABRT, SIGTRAP, SIGSYS), whose handler (Open MPI installs one that prints a
 * backtrace) is called after the record. Nothing here is on a hot path: it runs once,
 * at MPI_Init, and at the end. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cs_prof_end.h"

static struct sigaction previous[NSIG];

static const int FAULTS[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
static const int STOPS[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGXCPU, SIGXFSZ,
                            SIGALRM, SIGUSR1, SIGUSR2};

void cs_end_note(int how, int code)
{
    cs_header_t *h = cs_hdr;
    if (!h) return;
    int none = 0;
    /* first one wins (a signal handler may race an exiting thread) */
    if (!__atomic_compare_exchange_n(&h->end_how, &none, -1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    h->end_code = code;
    h->end_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    __atomic_store_n(&h->end_how, how, __ATOMIC_RELEASE);
}

static void on_signal(int sig, siginfo_t *info, void *context)
{
    cs_end_note(CS_END_SIGNAL, sig);
    struct sigaction *old = &previous[sig];
    sigaction(sig, old, 0);
    if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
        old->sa_sigaction(sig, info, context);
    } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
    } else {
        raise(sig); /* blocked while this handler runs: delivered when it returns */
    }
}

static void watch(int sig, int faults)
{
    struct sigaction old, mine;
    if (sigaction(sig, 0, &old) != 0) return;
    int mine_to_take = old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO);
    if (!mine_to_take && (!faults || old.sa_handler == SIG_IGN)) return; /* the program's */
    previous[sig] = old;
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = on_signal;
    mine.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&mine.sa_mask);
    sigaction(sig, &mine, 0);
}

#ifdef __GLIBC__
static void on_exit_status(int status, void *arg)
{
    (void)arg;
    cs_end_note(CS_END_EXIT, status);
}
#else
static void on_exit_plain(void)
{
    cs_end_note(CS_END_EXIT, 0);
}
#endif

void cs_end_watch(void)
{
    static int watching;
    if (!cs_hdr || __atomic_exchange_n(&watching, 1, __ATOMIC_ACQ_REL)) return;
#ifdef __GLIBC__
    on_exit(on_exit_status, 0);
#else
    atexit(on_exit_plain);
#endif
    for (size_t i = 0; i < sizeof FAULTS / sizeof FAULTS[0]; i++) watch(FAULTS[i], 1);
    for (size_t i = 0; i < sizeof STOPS / sizeof STOPS[0]; i++) watch(STOPS[i], 0);
}

/* Not counted as a call (it ends the job): it only says who ended it, and with which code. */
CS_EXPORT int MPI_Abort(MPI_Comm comm, int errorcode)
{
    cs_end_note(CS_END_ABORT, errorcode);
    return PMPI_Abort(comm, errorcode);
}
