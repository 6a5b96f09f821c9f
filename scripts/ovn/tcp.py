#!/usr/bin/python3
"""tcp.py: the TCP half of scripts/ovn-sandbox's checks, run in a namespace.

  tcp.py serve PORT NAME   answer every connection with "NAME PEER-IP\n"
                           (the address the server saw: NAT shows there)
  tcp.py get IP PORT       connect, print the answer; exit 1 on failure
                           (5 s timeout)
"""
import socket
import sys


def serve(port, name):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(16)
    while True:
        c, peer = s.accept()
        try:
            c.sendall(("%s %s\n" % (name, peer[0])).encode())
        except OSError:
            pass
        c.close()


def get(ip, port):
    try:
        c = socket.create_connection((ip, port), timeout=5)
        c.settimeout(5)
        data = b""
        while True:
            b = c.recv(256)
            if not b:
                break
            data += b
        c.close()
    except OSError as e:
        print("connect %s:%d: %s" % (ip, port, e))
        return 1
    sys.stdout.write(data.decode())
    return 0 if data else 1


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]), sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "get":
        sys.exit(get(sys.argv[2], int(sys.argv[3])))
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
