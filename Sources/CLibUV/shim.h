#ifndef WSLOAD_CLIBUV_SHIM_H
#define WSLOAD_CLIBUV_SHIM_H

#include <uv.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/resource.h>

/// Names the calling thread (at most 15 bytes are kept), for debuggers and `top -H`.
static inline void wsload_set_thread_name(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }

/// Sizes of libuv's handle and request structs, so Swift can allocate them without importing layouts.
static inline size_t wsload_uv_handle_size(uv_handle_type type) { return uv_handle_size(type); }

#include <fcntl.h>
#include <unistd.h>

// setns(2) is a GNU extension that the Glibc module does not declare.
extern int setns(int fd, int nstype);

/// Moves the calling thread into the network namespace at `path` (e.g. /run/netns/NAME).
/// Returns 0, or -errno.
static inline int wsload_enter_network_namespace(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    int status = setns(fd, 0x40000000 /* CLONE_NEWNET */);
    int saved = errno;
    close(fd);
    return status == 0 ? 0 : -saved;
}

#include <spawn.h>

// A GNU extension (glibc 2.34) that the Glibc module does not declare: the child closes every descriptor from
// `from` up, so a spawned process holds exactly the descriptors its file actions give it.
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
// pipe2(2) with O_CLOEXEC, likewise undeclared: a pipe no concurrently spawned child can inherit.
extern int pipe2(int fds[2], int flags);

#endif
