"""The kinds of access a step makes to a chunk: a local read, a remote load, a local write,
a remote store (``nunasim.mapping.accesses`` lists the accesses; the engines number their
messages by these)."""

READ, LOAD, WRITE, STORE = 0, 1, 2, 3
