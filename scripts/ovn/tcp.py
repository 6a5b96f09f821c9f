#!/usr/bin/python3
"""tcp.py: the TCP half of scripts/ovn-sandbox's checks, run in a namespace.

  tcp.py serve PORT NAME   answer every connection with "NAME PEER-IP\n"
                           (the address the server saw: NAT shows there)
  tcp.py get IP PORT       connect, print the answer; exit 1 on failure
                           (5 s timeout)
  tcp.py dns SERVER NAME   one UDP DNS query for NAME's A record, print the
                           answer's addresses; exit 1 on no answer (3 s)
"""
import socket
import struct
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


def dns(server, name):
    qid = 0x4f56
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack("!HH", 1, 1)  # A, IN
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    try:
        s.sendto(q, (server, 53))
        r, _ = s.recvfrom(1500)
    except OSError as e:
        print("dns %s at %s: %s" % (name, server, e))
        return 1
    rid, flags, qd, an = struct.unpack("!HHHH", r[:8])
    if rid != qid or not flags & 0x8000:
        print("dns: not an answer to the query")
        return 1
    i = 12
    for _ in range(qd):  # skip the question
        while r[i]:
            i += r[i] + 1
        i += 5
    addrs = []
    for _ in range(an):
        if r[i] & 0xC0 == 0xC0:
            i += 2
        else:
            while r[i]:
                i += r[i] + 1
            i += 1
        typ, _, _, rdlen = struct.unpack("!HHIH", r[i:i + 10])
        i += 10
        if typ == 1 and rdlen == 4:
            addrs.append(socket.inet_ntoa(r[i:i + 4]))
        i += rdlen
    print(" ".join(addrs) if addrs else "no-address")
    return 0 if addrs else 1


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]), sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "get":
        sys.exit(get(sys.argv[2], int(sys.argv[3])))
    elif len(sys.argv) == 4 and sys.argv[1] == "dns":
        sys.exit(dns(sys.argv[2], sys.argv[3]))
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
