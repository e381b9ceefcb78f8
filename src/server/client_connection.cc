#include "server/client_connection.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>

namespace tessera::server {

namespace {

// The numeric host and the port of a socket address, as cpp-httplib writes them.
bool endpoint_of(const sockaddr_storage& a, std::string& host, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    if (!inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text))) return false;
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    if (!inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text))) return false;
    port = ntohs(v6->sin6_port);
  } else {
    return false;
  }
  host = text;
  return true;
}

bool connects(int fd, const std::string& remote_addr, int remote_port, const std::string& local_addr,
              int local_port) {
  sockaddr_storage peer{}, self{};
  socklen_t peer_len = sizeof(peer), self_len = sizeof(self);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &self_len) != 0) return false;
  std::string peer_host, self_host;
  int peer_port = -1, self_port = -1;
  return endpoint_of(peer, peer_host, peer_port) && endpoint_of(self, self_host, self_port) &&
         peer_port == remote_port && self_port == local_port && peer_host == remote_addr && self_host == local_addr;
}

}  // namespace

int ClientConnection::find_socket() const {
  if (remote_port_ < 0 || local_port_ < 0) return -1;
  // /proc/self/fd lists the open descriptors (Linux); elsewhere try the low ones.
  if (DIR* d = opendir("/proc/self/fd")) {
    int found = -1;
    while (const dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const int fd = std::atoi(e->d_name);
      if (fd != dirfd(d) && connects(fd, remote_addr_, remote_port_, local_addr_, local_port_)) {
        found = fd;
        break;
      }
    }
    closedir(d);
    return found;
  }
  for (int fd = 0; fd < 4096; ++fd)
    if (connects(fd, remote_addr_, remote_port_, local_addr_, local_port_)) return fd;
  return -1;
}

bool ClientConnection::gone() {
  if (!searched_) {
    fd_ = find_socket();
    searched_ = true;
  }
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
#ifdef POLLRDHUP
  p.events |= POLLRDHUP;
#endif
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return true;
#ifdef POLLRDHUP
  if (p.revents & POLLRDHUP) return true;
#endif
  if (p.revents & POLLIN) {  // readable: a FIN reads as 0 bytes, a pipelined request as more
    char byte;
    return recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  }
  return false;
}

}  // namespace tessera::server
