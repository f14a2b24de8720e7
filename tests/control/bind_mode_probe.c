// SPDX-License-Identifier: BSD-3-Clause
/* LD_PRELOAD probe for listener_test: after every successful bind() of a unix socket with a path,
 * appends "<mode in octal> <path>\n" to $SKBNF_BIND_PROBE_OUT. The mode is the socket file's at
 * that instant, before listen(): a socket created world-connectable and chmod-ed later shows up
 * here with its first mode. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

int bind(int fd, const struct sockaddr* addr, socklen_t len) {
  int (*real)(int, const struct sockaddr*, socklen_t) =
      (int (*)(int, const struct sockaddr*, socklen_t))dlsym(RTLD_NEXT, "bind");
  int rc = real(fd, addr, len);
  const char* out = getenv("SKBNF_BIND_PROBE_OUT");
  if (rc == 0 && out != NULL && addr != NULL && addr->sa_family == AF_UNIX) {
    const struct sockaddr_un* un = (const struct sockaddr_un*)addr;
    struct stat st;
    if (un->sun_path[0] != '\0' && stat(un->sun_path, &st) == 0) {
      FILE* f = fopen(out, "a");
      if (f != NULL) {
        fprintf(f, "%o %s\n", (unsigned)(st.st_mode & 0777), un->sun_path);
        fclose(f);
      }
    }
  }
  return rc;
}
