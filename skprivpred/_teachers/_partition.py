"""A keyed, format-preserving permutation of ``[0, n)``, computable element by element.

The teachers' partition needs one random permutation of the ``n`` training rows,
drawn from the fit stream and never from the data. ``numpy.random.permutation``
materialises all ``n`` indices in one process; rows that live in the partitions
of a cluster need the same permutation *per element*: each partition computes
the permuted position of its own rows from their global indices and a key, and
nothing of size ``n`` is ever built in one place. :class:`KeyedPermutation` is
that function; the in-memory partition
(:func:`skprivpred._teachers._partition.random_partition`) and the dask path
(:mod:`skprivpred._teachers._dask_teachers`) both use it, so both give the same blocks.

Construction
------------
A balanced Feistel network (Luby & Rackoff 1988) on ``2h``-bit words, ``h``
the smallest integer with ``4**h >= n``, made into a permutation of ``[0, n)``
by cycle-walking (Black & Rogaway 2002): an element whose image falls outside
``[0, n)`` is encrypted again until it falls inside. Cycle-walking a
permutation of the larger domain gives a permutation of the smaller one, and
since the domain is less than ``4 n``, an element walks fewer than four times
on average.

Each of :data:`ROUNDS` rounds maps the halves ``(L, R)`` to
``(R, L xor F_i(R))`` with the round function
``F_i(R) = top_h(mix64(R xor k_i))``: ``k_i`` is the round's 64-bit key word,
``mix64`` the finaliser of SplitMix64 (Steele, Lea & Flood 2014; the
multipliers of Stafford's "Mix13"), a bijection of 64-bit words with full
avalanche, and ``top_h`` keeps its ``h`` highest bits. The key is
:data:`ROUNDS` words drawn from the fit stream (:meth:`KeyedPermutation.from_rng`).
Ten rounds, as NIST's format-preserving FF1 uses (SP 800-38G), leave a wide
margin over the four that make a Feistel network a strong pseudorandom
permutation when its round functions are pseudorandom (Luby & Rackoff).

What it is not: a cipher. ``mix64`` is not a cryptographic function, so the
permutation is pseudorandom in the statistical sense only (the tests check
that it is a bijection and that its law over keys is uniform where they can
tell). The privacy argument needs no more: every partition fixed before the
data are read keeps one changed row inside one teacher; the key only makes the
partition the uniform random one that the accuracy analysis assumes (and that
shields accuracy from rows sorted by label).

All arithmetic is on ``numpy.uint64`` arrays (wrapping multiplication), vectorised
over any array of indices.

References
----------
M. Luby and C. Rackoff. How to construct pseudorandom permutations from
pseudorandom functions. SIAM J. Computing 17(2), 1988.
J. Black and P. Rogaway. Ciphers with arbitrary finite domains. CT-RSA 2002.
G. L. Steele, D. Lea and C. H. Flood. Fast splittable pseudorandom number
generators. OOPSLA 2014.
M. Dworkin. Recommendation for block cipher modes of operation: methods for
format-preserving encryption. NIST SP 800-38G, 2016.
"""

from __future__ import annotations

import numpy as np

pass


__all__ = ["ROUNDS", "KeyedPermutation", "block_of", "block_sizes"]

#: Feistel rounds (FF1's count).
ROUNDS = 10

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, in place on a uint64 array (and returned)."""
    z ^= z >> _S30
    z *= _M1
    z ^= z >> _S27
    z *= _M2
    z ^= z >> _S31
    return z


class KeyedPermutation:
    """The permutation of ``[0, n_items)`` defined by a key (see the module docstring).

    Parameters
    ----------
    n_items : int
        Size of the domain, at least 1.
    key : array-like of ROUNDS uint64
        The round keys (:meth:`from_rng` draws them).
    """

    def __init__(self, n_items: int, key) -> None:
        n_items = int(n_items)
        if n_items < 1:
            raise ValueError(f"n_items must be at least 1, got {n_items}.")
        key = np.asarray(key, dtype=np.uint64).reshape(-1)
        if key.shape != (ROUNDS,):
            raise ValueError(f"key must hold {ROUNDS} words, got {key.shape[0]}.")
        self.n_items = n_items
        self.key = key
        self.half_bits = (max(n_items - 1, 0).bit_length() + 1) // 2  # smallest h: 4**h >= n
        self._mask = np.uint64((1 << self.half_bits) - 1)
        self._shift = np.uint64(self.half_bits)
        self._top = np.uint64(64 - self.half_bits)

    @classmethod
    def from_rng(cls, n_items: int, rng: np.random.Generator) -> KeyedPermutation:
        """Draw the key from ``rng`` (always :data:`ROUNDS` words, whatever ``n_items``)."""
        return cls(n_items, rng.integers(0, 2**64, size=ROUNDS, dtype=np.uint64))

    def _round(self, i: int, half: np.ndarray) -> np.ndarray:
        """``F_i(half)``: the top ``h`` bits of ``mix64(half xor k_i)`` (a new array)."""
        out = half ^ self.key[i]
        return _mix64(out) >> self._top

    def _encrypt(self, x: np.ndarray) -> np.ndarray:
        left, right = x >> self._shift, x & self._mask
        for i in range(ROUNDS):
            left, right = right, left ^ self._round(i, right)
        return (left << self._shift) | right

    def _decrypt(self, x: np.ndarray) -> np.ndarray:
        left, right = x >> self._shift, x & self._mask
        for i in reversed(range(ROUNDS)):
            left, right = right ^ self._round(i, left), left
        return (left << self._shift) | right

    def _walk(self, index, step) -> np.ndarray:
        index = np.asarray(index)
        if index.size and (index.min() < 0 or index.max() >= self.n_items):
            raise ValueError(f"indices must lie in [0, {self.n_items}).")
        out = index.astype(np.uint64).reshape(-1)
        if self.half_bits == 0:  # the domain {0}
            return out.astype(np.int64).reshape(index.shape)
        with np.errstate(over="ignore"):
            out = step(out)
            outside = np.flatnonzero(out >= np.uint64(self.n_items))
            while outside.size:  # cycle-walking: encrypt again until inside [0, n)
                walked = step(out[outside])
                out[outside] = walked
                outside = outside[walked >= np.uint64(self.n_items)]
        return out.astype(np.int64).reshape(index.shape)

    def forward(self, index) -> np.ndarray:
        """Permuted position of each element of ``index`` (an int array of any shape)."""
        return self._walk(index, self._encrypt)

    def inverse(self, position) -> np.ndarray:
        """The element at each permuted ``position``: ``inverse(forward(i)) == i``."""
        return self._walk(position, self._decrypt)

    def order(self) -> np.ndarray:
        """All of ``[0, n)`` sorted by permuted position (materialises ``n`` indices)."""
        order = np.empty(self.n_items, dtype=np.int64)
        order[self.forward(np.arange(self.n_items))] = np.arange(self.n_items)
        return order


def block_sizes(n_items: int, n_blocks: int) -> np.ndarray:
    """Sizes of ``numpy.array_split(range(n_items), n_blocks)``: the larger blocks first."""
    base, extra = divmod(int(n_items), int(n_blocks))
    sizes = np.full(int(n_blocks), base, dtype=np.int64)
    sizes[:extra] += 1
    return sizes


def block_of(position, n_items: int, n_blocks: int) -> np.ndarray:
    """The block (``numpy.array_split``'s cut of ``[0, n_items)``) of each position."""
    position = np.asarray(position, dtype=np.int64)
    base, extra = divmod(int(n_items), int(n_blocks))
    large = extra * (base + 1)  # positions in the first `extra` blocks, of base + 1 each
    if base == 0:  # (n_items < n_blocks: only the `extra` blocks of one element exist)
        return position.copy()
    return np.where(
        position < large, position // (base + 1), extra + (position - large) // base
    ).astype(np.int64)


def random_partition(n_samples: int, n_parts: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Split ``range(n_samples)`` into ``n_parts`` disjoint random blocks.

    The blocks come from one keyed permutation of ``[0, n_samples)``
    (:class:`~skprivpred._teachers._partition.KeyedPermutation`, its key drawn from
    ``rng``: the same number of draws whatever ``n_samples``), cut by
    ``numpy.array_split`` (sizes ``floor(n/r)`` or ``ceil(n/r)``, never empty
    when ``n_parts <= n_samples``): block ``j`` holds the rows whose permuted
    position falls in the ``j``-th cut, ordered by position. Rows on a cluster
    are cut by the same function, partition by partition
    (:mod:`skprivpred._teachers._dask_teachers`), into the same blocks. Nothing about
    the data is used.
    """
    return np.array_split(KeyedPermutation.from_rng(n_samples, rng).order(), n_parts)
