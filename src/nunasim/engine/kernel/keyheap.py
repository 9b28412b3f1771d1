"""A binary min-heap of (float key, int item) pairs in two flat arrays, ties broken by the
smaller item: the resources' filling levels (``fairness``) and the active flows' projected
drains (``loop``).
"""

from __future__ import annotations

from nunasim.engine.jit import jit


@jit(inline=True)
def heap_push(key, item, n, k, i):
    j = n
    while j > 0:
        parent = (j - 1) >> 1
        if key[parent] < k or (key[parent] == k and item[parent] <= i):
            break
        key[j], item[j] = key[parent], item[parent]
        j = parent
    key[j], item[j] = k, i
    return n + 1


@jit(inline=True)
def heap_pop(key, item, n):
    k, i = key[0], item[0]
    n -= 1
    lk, li = key[n], item[n]
    j = 0
    while True:
        c = 2 * j + 1
        if c >= n:
            break
        if c + 1 < n and (key[c + 1] < key[c] or (key[c + 1] == key[c] and item[c + 1] < item[c])):
            c += 1
        if lk < key[c] or (lk == key[c] and li <= item[c]):
            break
        key[j], item[j] = key[c], item[c]
        j = c
    key[j], item[j] = lk, li
    return k, i, n
