"""LLM inference arithmetic: model shapes, per-layer operators and their roofline times, and
the collectives each layer issues under tensor, expert, pipeline and data parallelism.

Pure functions of data: nothing here runs a simulation (``nunasim.experiments.llm_study``
prices the collectives) or reads a file (``nunasim.io.models``).
"""
