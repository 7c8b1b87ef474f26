/* A user's own LD_PRELOAD library that installs signal handlers in its constructor
 * (tests/test_failures_launch.py): it loads into commscope's own process, the job
 * guard, the launcher and the ranks alike.  USER_PRELOAD_MODE chooses what it does:
 *
 *   handlers   a do-nothing handler for SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGSEGV,
 *              SIGPIPE, SIGALRM and SIGUSR1 (the default)
 *   siginfo    the same with SA_SIGINFO
 *   ignore     SIGCHLD ignored (children are reaped by the kernel, waitpid fails)
 *   nocldwait  a SIGCHLD handler with SA_NOCLDWAIT (the same, with a handler)
 *   reap       a SIGCHLD handler that reaps every child it can
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static void nothing(int sig) { (void)sig; }

static void with_info(int sig, siginfo_t *si, void *uc) { (void)sig, (void)si, (void)uc; }

static void reap(int sig)
{
    (void)sig;
    int e = errno;
    while (waitpid(-1, 0, WNOHANG) > 0) continue;
    errno = e;
}

__attribute__((constructor)) static void install(void)
{
    const char *mode = getenv("USER_PRELOAD_MODE");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    if (!mode) mode = "handlers";
    if (!strcmp(mode, "ignore") || !strcmp(mode, "nocldwait") || !strcmp(mode, "reap")) {
        sa.sa_handler = nothing;
        if (!strcmp(mode, "ignore")) sa.sa_handler = SIG_IGN;
        if (!strcmp(mode, "reap")) sa.sa_handler = reap;
        sa.sa_flags = !strcmp(mode, "nocldwait") ? SA_NOCLDWAIT : SA_RESTART;
        sigaction(SIGCHLD, &sa, 0);
        return;
    }
    if (!strcmp(mode, "siginfo")) {
        sa.sa_sigaction = with_info;
        sa.sa_flags = SA_SIGINFO;
    } else
        sa.sa_handler = nothing;
    static const int sigs[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGSEGV, SIGPIPE, SIGALRM, SIGUSR1};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, 0);
}
