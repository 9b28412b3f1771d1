"""The engines' shared kernel: what every compiled loop agrees on, defined once.

``kinds``: the message and resource kinds; ``rows``: the columns of a resource row and of a
route entry, the packed arrays a loop reads; ``heap`` and ``keyheap``: the event heap and
the keyed heap of the flow engine; ``ready``: the step bookkeeping both loops start from.

The compiled loops read these constants as globals, which numba freezes when it compiles:
its on-disk cache notices a change to the file of the function it compiled, not to the
modules it took constants from, so after changing a constant here clear the caches
(``find src -name '*.nbi' -delete``); ``tests/test_kernel.py`` checks the kinds agree with
the layers that name them.
"""
