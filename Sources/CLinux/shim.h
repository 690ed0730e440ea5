#ifndef LOCIFY_CLINUX_SHIM_H
#define LOCIFY_CLINUX_SHIM_H

/* Linux system calls the toolchain's Glibc module does not import: epoll, eventfd, accept4, and
   glibc's malloc_trim.
   `struct epoll_event` is packed on x86_64, so it is only touched from C, through these helpers. */

#include <stddef.h>
#include <stdint.h>
#include <malloc.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

static inline int locify_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static inline int locify_epoll_control(int epoll_fd, int operation, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event;
    event.events = events;
    event.data.u64 = token;
    return epoll_ctl(epoll_fd, operation, fd, &event);
}

static inline size_t locify_epoll_event_size(void) { return sizeof(struct epoll_event); }

static inline int locify_epoll_wait(int epoll_fd, void *events, int capacity, int timeout_ms) {
    return epoll_wait(epoll_fd, (struct epoll_event *)events, capacity, timeout_ms);
}

static inline void locify_epoll_event_at(const void *events, int index, uint32_t *flags, uint64_t *token) {
    const struct epoll_event *event = (const struct epoll_event *)events + index;
    *flags = event->events;
    *token = event->data.u64;
}

static inline int locify_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

/* Declared by <sys/socket.h> only under _GNU_SOURCE, which would change other libc types and clash
   with the Glibc module; the prototype is the C library's. */
extern int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);

static inline int locify_accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) {
    return accept4(fd, address, length, flags);
}

/* Returns the free memory of every malloc arena to the kernel; 1 when some was released. */
static inline int locify_malloc_trim(void) { return malloc_trim(0); }

static const int LOCIFY_EPOLL_CTL_ADD = EPOLL_CTL_ADD;
static const int LOCIFY_EPOLL_CTL_DEL = EPOLL_CTL_DEL;
static const int LOCIFY_EPOLL_CTL_MOD = EPOLL_CTL_MOD;

#endif
