"""The reference gRPC client of TestPathToAnOutsideGRPCServer: Debian's python3-grpcio (gRPC's
C core), asking grpc.health.v1.Health/Check of the whole server without generated stubs (an
empty request; SERVING is the answer b'\\x08\\x01').

    health_check_client.py ADDRESS:PORT SERVER_NAME CA_FILE COUNT

COUNT + 1 calls each on a channel of its own (a local subchannel pool: a new connection each,
TCP, TLS and HTTP/2 settings included), the first left out (it pays the library's start), then
COUNT + 1 on one channel, the first left out (it opens the connection). Each call is timed from
its start to its answer; 100 ms between calls, as the egress probe paces them. Prints one JSON
object: the medians in microseconds, "new" and "reused".
"""
import json
import statistics
import sys
import time

import grpc

METHOD = "/grpc.health.v1.Health/Check"
SERVING = b"\x08\x01"


def channel(target, name, roots):
    creds = grpc.ssl_channel_credentials(root_certificates=roots)
    opts = [("grpc.ssl_target_name_override", name), ("grpc.use_local_subchannel_pool", 1)]
    return grpc.secure_channel("ipv4:" + target, creds, options=opts)


def call(ch):
    check = ch.unary_unary(METHOD, request_serializer=None, response_deserializer=None)
    start = time.perf_counter_ns()
    answer = check(b"", timeout=5)
    took = (time.perf_counter_ns() - start) / 1000
    if answer != SERVING:
        sys.exit("answer %r, want SERVING" % answer)
    return took


def main():
    target, name, ca, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with open(ca, "rb") as f:
        roots = f.read()
    new = []
    for _ in range(count + 1):
        with channel(target, name, roots) as ch:
            new.append(call(ch))
        time.sleep(0.1)
    reused = []
    with channel(target, name, roots) as ch:
        for _ in range(count + 1):
            reused.append(call(ch))
            time.sleep(0.1)
    print(json.dumps({"new": statistics.median(new[1:]), "reused": statistics.median(reused[1:])}))


# (not named grpc_health.py: the grpc package imports a module of that name when it finds one)
if __name__ == "__main__":
    main()
