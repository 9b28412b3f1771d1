"""nunasim: collective communication on pods of multi-die GPUs, and what NUNA costs."""

__version__ = "0.1.0"
