// Whether the client of a request still in the handler is connected: the
// request's socket found among this process's descriptors by its two
// endpoints (cpp-httplib 0.11 does not hand the socket to handlers), then
// polled without reading. Used while a request waits in the engine's queue,
// when nothing is written to the client yet that could fail: a client that
// has gone is noticed within a poll and its request leaves the queue.
#pragma once

#include <string>

namespace tessera::server {

class ClientConnection {
 public:
  // Looks up the connection from (remote_addr, remote_port) to
  // (local_addr, local_port) as the request reports them.
  ClientConnection(const std::string& remote_addr, int remote_port, const std::string& local_addr, int local_port);
  // Whether the socket was found (if not, gone() is always false).
  bool found() const { return fd_ >= 0; }
  // True once the peer has closed or reset the connection (a FIN or an
  // error is pending); bytes it sent and that are unread do not count.
  bool gone() const;

 private:
  int fd_ = -1;
};

}  // namespace tessera::server
