"""The examples; from the project root they import as ``examples.<name>`` (see README.md)."""
