"""The keyed permutation of [0, n) behind every teacher partition (skprivpred._teachers._partition).

A bijection for every size, deterministic for a key, different for different keys,
uniform over keys (chi-square and binomial tests with stated power), computable per
element in any order, and the in-memory partition is its array_split cut.
"""

import numpy as np
import pytest
from scipy import stats

from skprivpred._teachers._partition import (
    ROUNDS,
    KeyedPermutation,
    block_of,
    block_sizes,
    random_partition,
)

SIZES = [
    1,
    2,
    3,
    4,
    5,
    7,
    8,
    15,
    16,
    17,
    31,
    32,
    33,
    63,
    64,
    65,
    100,
    255,
    256,
    257,
    1000,
    1023,
    1024,
    1025,
    4095,
    4097,
    65_535,
    65_537,
    100_003,
]


def _key(seed):
    return np.random.default_rng(seed).integers(0, 2**64, size=ROUNDS, dtype=np.uint64)


@pytest.mark.parametrize("n", SIZES)
def test_a_bijection_of_zero_to_n_for_every_size(n):
    perm = KeyedPermutation(n, _key(n))
    positions = perm.forward(np.arange(n))
    assert positions.dtype == np.int64
    assert np.array_equal(np.sort(positions), np.arange(n))
    assert np.array_equal(perm.inverse(positions), np.arange(n))
    assert np.array_equal(perm.order()[positions], np.arange(n))


def test_deterministic_for_a_key_and_computable_per_element_in_any_order():
    n = 10_007
    a, b = KeyedPermutation(n, _key(1)), KeyedPermutation(n, _key(1))
    whole = a.forward(np.arange(n))
    assert np.array_equal(whole, b.forward(np.arange(n)))
    # Pieces in any order and shape (as partitions of a cluster compute them).
    shuffled = np.random.default_rng(0).permutation(n)
    assert np.array_equal(a.forward(shuffled), whole[shuffled])
    assert np.array_equal(
        a.forward(shuffled[:12].reshape(3, 4)), whole[shuffled[:12]].reshape(3, 4)
    )
    assert a.forward(np.array([], dtype=np.int64)).shape == (0,)


def test_different_keys_give_different_permutations():
    n = 1000
    seen = {KeyedPermutation(n, _key(seed)).forward(np.arange(n)).tobytes() for seed in range(50)}
    assert len(seen) == 50
    # One changed key word changes the permutation.
    key = _key(3)
    other = key.copy()
    other[ROUNDS // 2] ^= np.uint64(1)
    assert not np.array_equal(
        KeyedPermutation(n, key).forward(np.arange(n)),
        KeyedPermutation(n, other).forward(np.arange(n)),
    )


@pytest.mark.parametrize("n", [5, 17, 64, 100])
def test_the_position_of_an_element_is_uniform_over_keys(n):
    # Chi-square test of the position of element 0 (and of element n-1) over 80 n keys at
    # level 1e-4. Power: a law that puts twice the mass 1/n on a tenth of the positions (and
    # less on the others) has noncentrality 80 n * sum((p - 1/n)^2 * n), computed
    # below; the test asserts it detects that alternative with probability above 0.99.
    n_keys = 80 * n
    positions = np.array(
        [KeyedPermutation(n, _key(10_000 + s)).forward(np.array([0, n - 1])) for s in range(n_keys)]
    )
    level = 1e-4
    critical = stats.chi2.ppf(1 - level, n - 1)
    for column in positions.T:
        counts = np.bincount(column, minlength=n)
        statistic = ((counts - n_keys / n) ** 2 / (n_keys / n)).sum()
        assert statistic < critical
    # The power claim, computed: a tenth of the positions (at least one) at twice 1/n.
    heavy = max(1, n // 10)
    alt = np.full(n, (1 - 2 * heavy / n) / (n - heavy))
    alt[:heavy] = 2 / n
    noncentrality = n_keys * ((alt - 1 / n) ** 2 / (1 / n)).sum()
    assert stats.ncx2.sf(critical, n - 1, noncentrality) > 0.99


def test_pairwise_order_is_a_fair_coin():
    # For a uniform permutation, P(pos(i) < pos(j)) = 1/2 for every pair. Over 6000 keys and
    # a few pairs (adjacent, far, the domain's edges), each frequency lies within the
    # two-sided binomial bound at level 1e-5 (Bonferroni over the pairs); a bias of 0.05
    # (0.55 instead of 0.5) is caught with probability > 0.99 per pair (asserted).
    n, n_keys = 1000, 6000
    pairs = np.array([(0, 1), (1, 2), (0, n - 1), (500, 501), (998, 999), (3, 700)])
    flat = pairs.reshape(-1)
    less = np.zeros(len(pairs), dtype=np.int64)
    for s in range(n_keys):
        pos = KeyedPermutation(n, _key(50_000 + s)).forward(flat).reshape(-1, 2)
        less += pos[:, 0] < pos[:, 1]
    alpha = 1e-5 / len(pairs)
    lo, hi = stats.binom.ppf(alpha / 2, n_keys, 0.5), stats.binom.isf(alpha / 2, n_keys, 0.5)
    assert np.all((less >= lo) & (less <= hi)), less
    power = stats.binom.cdf(lo - 1, n_keys, 0.55) + stats.binom.sf(hi, n_keys, 0.55)
    assert power > 0.99


def test_a_broken_permutation_fails_the_uniformity_test():
    # The test above can fail: the identity-with-a-rotation "permutation" (position = i + k
    # mod n for a random k) is uniform in position but never flips the order of (0, 1)
    # except at the wrap, so the pairwise frequency leaves the bound.
    n, n_keys = 1000, 4000
    rng = np.random.default_rng(0)
    shifts = rng.integers(0, n, size=n_keys)
    less = np.sum((0 + shifts) % n < (1 + shifts) % n)
    lo, hi = stats.binom.ppf(1e-5 / 2, n_keys, 0.5), stats.binom.isf(1e-5 / 2, n_keys, 0.5)
    assert not lo <= less <= hi


def test_the_key_is_ten_words_drawn_from_the_stream_whatever_n():
    for n in (1, 10, 10**9):
        rng = np.random.default_rng(5)
        perm = KeyedPermutation.from_rng(n, rng)
        reference = np.random.default_rng(5)
        assert np.array_equal(perm.key, reference.integers(0, 2**64, size=ROUNDS, dtype=np.uint64))
        assert rng.integers(2**31) == reference.integers(2**31)  # the stream moved by the key only


def test_large_domain_per_element():
    # n = 10^9: a few elements, never the whole domain.
    n = 10**9
    perm = KeyedPermutation(n, _key(9))
    index = np.array([0, 1, 2, n - 1, 123_456_789])
    pos = perm.forward(index)
    assert np.all((pos >= 0) & (pos < n)) and np.unique(pos).size == index.size
    assert np.array_equal(perm.inverse(pos), index)


def test_bad_arguments():
    with pytest.raises(ValueError, match="at least 1"):
        KeyedPermutation(0, _key(0))
    with pytest.raises(ValueError, match="10 words"):
        KeyedPermutation(5, _key(0)[:3])
    with pytest.raises(ValueError, match=r"\[0, 5\)"):
        KeyedPermutation(5, _key(0)).forward(np.array([5]))


@pytest.mark.parametrize("n, r", [(10, 3), (7, 7), (100, 7), (5, 1), (3, 5), (1000, 999)])
def test_block_of_matches_array_split(n, r):
    cut = np.array_split(np.arange(n), r)
    expected = np.concatenate([np.full(len(c), j) for j, c in enumerate(cut)])
    assert np.array_equal(block_of(np.arange(n), n, r), expected)
    assert np.array_equal(block_sizes(n, r), [len(c) for c in cut])


def test_random_partition_is_the_cut_of_the_keyed_permutation():
    n, r = 1003, 17
    parts = random_partition(n, r, np.random.default_rng(11))
    perm = KeyedPermutation.from_rng(n, np.random.default_rng(11))
    positions = perm.forward(np.arange(n))
    blocks = block_of(positions, n, r)
    for j, part in enumerate(parts):
        rows = np.flatnonzero(blocks == j)
        assert np.array_equal(part, rows[np.argsort(positions[rows])])  # ordered by position
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(n))
