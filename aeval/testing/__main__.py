"""``python -m aeval.testing``: serve a local OpenAI-compatible test server until interrupted."""

from __future__ import annotations

import sys

from ._server import main

sys.exit(main())
