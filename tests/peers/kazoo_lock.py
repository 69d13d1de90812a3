"""A kazoo lock holder for the ZooKeeper tests: takes Lock(PATH, IDENTIFIER) and prints one line,
`HELD <node path> <czxid>`, then waits for a line on stdin: `release` releases the lock and
exits; end of input exits without releasing (the session closes, which deletes the node).

    python3 kazoo_lock.py HOSTS PATH IDENTIFIER [SESSION_TIMEOUT_S]
"""

import sys

from kazoo.client import KazooClient


def main():
    hosts, path, identifier = sys.argv[1], sys.argv[2], sys.argv[3]
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 10.0
    # Reconnect within a second of a restarted server: kazoo's default backoff doubles without a
    # low bound, and the tests restart ZooKeeper under a holder and then release its lock.
    # The same for a command (the release) sent while the connection is being re-established.
    retry = {"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1}
    client = KazooClient(
        hosts=hosts,
        timeout=timeout,
        connection_retry=retry,
        command_retry=retry,
    )
    client.start(timeout=20)
    lock = client.Lock(path, identifier)
    lock.acquire(timeout=60)
    node = lock.node
    # kazoo keeps the node's name; its czxid is the fencing token.
    full = path.rstrip("/") + "/" + node
    _, stat = client.get(full)
    print("HELD %s %d" % (full, stat.czxid), flush=True)
    line = sys.stdin.readline()
    if line.strip() == "release":
        lock.release()
        print("RELEASED", flush=True)
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
