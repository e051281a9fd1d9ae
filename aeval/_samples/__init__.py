"""Sample input: the sample model, the file formats, the loaders and their limits.

``_model`` (Parameters, EvaluationSample, Samples) is the bottom of the package and imports
nothing from the rest of aeval but the exceptions; the loaders are imported on first use.
"""

from __future__ import annotations

from ._model import EvaluationSample, Parameters, ParametersTypes, Samples

__all__ = ["EvaluationSample", "Parameters", "ParametersTypes", "Samples"]
