"""TCP transfers for the steering tests, run inside a network namespace.

    net_transfer.py sink ADDR FLOWS                 accept FLOWS connections, read each to EOF
    net_transfer.py source ADDR FLOWS BYTES         FLOWS connections one after another, BYTES each
    net_transfer.py serve ADDR REPLY_BYTES          answer every 64-byte request with REPLY_BYTES
    net_transfer.py fetch ADDR REQUESTS REPLY_BYTES send REQUESTS requests, read every reply

The listening side prints "ready" once it listens.
"""

import socket
import sys

PORT = 5290


def main(argv):
    role, addr = argv[1], argv[2]
    if role in ("sink", "serve"):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, PORT))
        s.listen(64)
        print("ready", flush=True)
        if role == "sink":
            for _ in range(int(argv[3])):
                c, _ = s.accept()
                while c.recv(1 << 20):
                    pass
                c.close()
        else:
            c, _ = s.accept()
            reply = b"y" * int(argv[3])
            while c.recv(64):
                c.sendall(reply)
        return 0
    if role == "source":
        buf = b"x" * (1 << 16)
        for _ in range(int(argv[3])):
            s = socket.create_connection((addr, PORT))
            sent = 0
            while sent < int(argv[4]):
                s.sendall(buf)
                sent += len(buf)
            s.close()
        return 0
    s = socket.create_connection((addr, PORT))
    size = int(argv[4])
    for _ in range(int(argv[3])):
        s.sendall(b"r" * 64)
        need = size
        while need:
            need -= len(s.recv(min(need, 1 << 20)))
    s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
