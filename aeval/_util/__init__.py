"""Helpers every layer uses: numbers, statistics, groups, the plugin registry, single-flight
calls, JSON safety, atomic file writes and the ``__module__`` rewrite of public names."""
