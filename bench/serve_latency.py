#!/usr/bin/env python3
"""How fast `catdog serve` answers: one client, then several at once, posting one photo per
request as the page does, and the server's memory before and after.

    catdog serve --port 8080 --backend cpu &
    python3 bench/serve_latency.py --url http://127.0.0.1:8080/ --photo PHOTO.jpg --pid $!

Standard library only. Prints the median and the 90th percentile of the request times (the
whole request: upload, decoding, the model, the reply), and requests per second."""

import argparse
import http.client
import re
import statistics
import threading
import time
import urllib.parse
import uuid


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def token_of(host, port):
    connection = http.client.HTTPConnection(host, port)
    connection.request("GET", "/")
    page = connection.getresponse().read().decode()
    return re.search(r'name="catdog-token" content="([0-9a-f]+)"', page).group(1)


def body_of(photo, name):
    boundary = uuid.uuid4().hex
    body = (
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"photo\"; "
        f"filename=\"{name}\"\r\nContent-Type: image/jpeg\r\n\r\n"
    ).encode() + photo + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def client(host, port, token, body, content_type, count, times):
    connection = http.client.HTTPConnection(host, port)
    headers = {"X-Catdog-Token": token, "Content-Type": content_type}
    for _ in range(count):
        started = time.perf_counter()
        connection.request("POST", "/api/predict", body=body, headers=headers)
        reply = connection.getresponse()
        reply.read()
        assert reply.status == 200, reply.status
        times.append(time.perf_counter() - started)


def run(host, port, token, body, content_type, clients, per_client, report=True):
    times = []
    threads = [
        threading.Thread(
            target=client, args=(host, port, token, body, content_type, per_client, times)
        )
        for _ in range(clients)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    times.sort()
    if not report:
        return
    print(
        f"{clients} client(s) x {per_client} requests: median {1000 * statistics.median(times):.1f} ms, "
        f"90th percentile {1000 * times[int(0.9 * len(times))]:.1f} ms, "
        f"{len(times) / wall:.1f} requests/s"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080/")
    parser.add_argument("--photo", required=True)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--pid", type=int, help="the server's process, for its memory")
    args = parser.parse_args()
    url = urllib.parse.urlparse(args.url)
    host, port = url.hostname, url.port or 80
    with open(args.photo, "rb") as f:
        photo = f.read()
    print(f"photo: {args.photo}, {len(photo) / 1000:.0f} kB")
    if args.pid:
        print(f"server memory at rest: {rss_mib(args.pid):.0f} MiB (VmRSS)")
    token = token_of(host, port)
    body, content_type = body_of(photo, "photo.jpg")
    run(host, port, token, body, content_type, 1, 5, report=False)  # warm-up
    run(host, port, token, body, content_type, 1, args.requests)
    run(host, port, token, body, content_type, args.clients, args.requests)
    if args.pid:
        print(f"server memory after: {rss_mib(args.pid):.0f} MiB (VmRSS)")


if __name__ == "__main__":
    main()
