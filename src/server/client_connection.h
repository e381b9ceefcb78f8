// Whether the client of a request still in the handler is connected: the
// request's socket found among this process's descriptors by its two
// endpoints (cpp-httplib 0.11 does not hand the socket to handlers), then
// polled without reading. Used while a request waits in the engine's queue,
// when nothing is written to the client yet that could fail: a client that
// has gone is noticed within a poll and its request leaves the queue.
#pragma once

#include <string>
#include <utility>

namespace tessera::server {

class ClientConnection {
 public:
  // The connection from (remote_addr, remote_port) to (local_addr,
  // local_port) as the request reports them; its socket is looked up on the
  // first gone(), so a request that starts at once never pays the search.
  ClientConnection(std::string remote_addr, int remote_port, std::string local_addr, int local_port)
      : remote_addr_(std::move(remote_addr)), local_addr_(std::move(local_addr)), remote_port_(remote_port),
        local_port_(local_port) {}
  // True once the peer has closed or reset the connection (a FIN or an
  // error is pending); bytes it sent and that are unread do not count.
  // False if the socket cannot be found.
  bool gone();

 private:
  int find_socket() const;  // -1 if not found

  std::string remote_addr_, local_addr_;
  int remote_port_, local_port_;
  bool searched_ = false;
  int fd_ = -1;
};

}  // namespace tessera::server
