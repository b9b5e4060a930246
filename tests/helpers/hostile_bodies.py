"""The hypothesis strategies and budget of the hostile body sweeps."""

from __future__ import annotations

from hypothesis import strategies as st

from tests.helpers import fuzz_examples

# Every JSON and form entry point, with valid credentials, so that generated bodies reach the
# code behind authentication: the right field names, values of every JSON type, text with lone
# surrogates (JSON's "\ud800" escape), nulls, and now and then a value that is valid.
LONE_SURROGATE = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])


# Lone surrogates appear in st.text() too, but rarely; half the time one is added.
ANY_TEXT = st.text(max_size=30) | st.tuples(st.text(max_size=15), LONE_SURROGATE).map("".join)


# The values a JSON parser hands over that a reader may not expect: NUL, integers no column holds,
# NaN and Infinity (json.dumps writes them, Python's json.loads reads them back), empty lists.
ODD_LEAVES = st.sampled_from(["\x00", "a\x00b", 2**64, -(2**63) - 1, 10**400, float("nan"), float("inf"), []])


LEAVES = st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT | ODD_LEAVES


ANY_JSON = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3), max_leaves=5
)


SWEEP_EXAMPLES = fuzz_examples(20)
