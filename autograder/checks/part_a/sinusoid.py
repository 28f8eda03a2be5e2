"""1.3 sinusoidal_positional_encoding: the table of "Attention Is All You Need"."""
import numpy as np

from ..spec import Value, check
from .base import PartATest, describe

FUNCTION = "sinusoidal_positional_encoding"
GROUP = "pe"
RAISES = ("pe.negative_T", "pe.zero_d", "pe.negative_d")


def cases():
    return {"pe.even": {"T": 12, "d_model": 8}, "pe.wide": {"T": 50, "d_model": 64},
            "pe.odd": {"T": 7, "d_model": 5}, "pe.one": {"T": 3, "d_model": 1},
            "pe.negative_T": {"T": -1, "d_model": 4}, "pe.zero_d": {"T": 4, "d_model": 0},
            "pe.negative_d": {"T": 4, "d_model": -2}}


def table(T, d, exponent=lambda c, d: 2 * (c // 2) / d, swap=False, start=0):
    angles = np.arange(start, start + T)[:, None] / 10000.0 ** exponent(np.arange(d), d)  # (T, d)
    sin, cos = (np.cos, np.sin) if swap else (np.sin, np.cos)
    return np.where(np.arange(d) % 2 == 0, sin(angles), cos(angles))


def signatures(T, d_model):
    yield None, table(T, d_model)
    yield "sin and cos look swapped (even columns are sines, odd columns cosines)", table(T, d_model, swap=True)
    yield "your frequencies use the column index c in 10000**(c/d_model); use 2i = c - c % 2", \
        table(T, d_model, exponent=lambda c, d: c / d)
    yield "your frequencies use 10000**(i/d_model) with the pair index i; the exponent is 2i/d_model", \
        table(T, d_model, exponent=lambda c, d: (c // 2) / d)
    yield "your positions start at 1; they start at 0 (row 0 is [0, 1, 0, 1, ...])", table(T, d_model, start=1)


class TestSinusoidal(PartATest):
    values = [
        Value("1.3.2", FUNCTION, 1, "sinusoidal_positional_encoding: values, even d_model", "pe.even", "pe.wide",
              public=True),
        Value("1.3.3", FUNCTION, 1, "sinusoidal_positional_encoding: values, odd d_model", "pe.odd", "pe.one",
              visibility="after_published"),
    ]

    @check("1.3.1", FUNCTION, 1, "sinusoidal_positional_encoding: shape (T, d_model), row 0")
    def test_sinusoidal_shape_and_row_zero(self):
        inputs, got = self.run_case("pe.even")
        T, d = inputs["T"], inputs["d_model"]
        pe = self.assert_shape("pe.even", got, (T, d), notation="(T, d_model)")
        row0 = np.tile([0.0, 1.0], d // 2)
        if not np.allclose(pe[0], row0, atol=1e-6):
            self.explain(f"{describe(FUNCTION, inputs)} -> row 0 (position 0): got {np.round(pe[0], 4).tolist()}, "
                         f"expected {row0.tolist()} (sin 0 = 0, cos 0 = 1)", FUNCTION, inputs, got)

    @check("1.3.4", FUNCTION, 1, "sinusoidal_positional_encoding: ValueError for bad sizes",
           visibility="after_published")
    def test_sinusoidal_rejects_bad_sizes(self):
        works = self.works("pe.even")
        self.assert_value_error("pe.negative_T", "T < 0", works)
        self.assert_value_error("pe.zero_d", "d_model <= 0", works)
        self.assert_value_error("pe.negative_d", "d_model <= 0", works)
