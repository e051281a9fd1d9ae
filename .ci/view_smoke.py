"""CI: start ``aeval view`` over a store, fetch its run list, and stop it with Ctrl-C."""

from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import sys
import urllib.request

aeval, store = sys.argv[1], sys.argv[2]
with sqlite3.connect(store) as database:
    (run_id,) = database.execute("SELECT id FROM runs ORDER BY seq DESC LIMIT 1").fetchone()
server = subprocess.Popen(
    [aeval, "view", "--store", store, "--port", "0"],
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
)
try:
    assert server.stdout is not None
    line = server.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+/", line)
    if found is None:
        sys.exit(f"ci: aeval view printed no address: {line!r}")
    with urllib.request.urlopen(found.group(0), timeout=30) as response:
        page = response.read().decode()
        policy = response.headers.get("Content-Security-Policy", "")
    if run_id not in page:
        sys.exit(f"ci: the viewer's run list does not show the stored run {run_id}")
    if "default-src" not in policy:
        sys.exit("ci: the viewer sent no Content-Security-Policy")
    sys.stdout.write(f"ci: '.[view]' alone serves the stored run {run_id} at {found.group(0)}\n")
finally:
    server.send_signal(signal.SIGINT)
    server.wait(timeout=30)
