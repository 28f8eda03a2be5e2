"""1.9 gelu: the tanh approximation GPT-2 uses."""
import numpy as np

from .. import gpt2
from ..spec import Value
from .base import PartATest

FUNCTION = "gelu"
BUGS = {
    "erf": "gelu looks like the exact erf GELU, not the tanh approximation GPT-2 uses",
    "sigmoid": "gelu looks like x * sigmoid(1.702 x), not the tanh approximation",
    "relu": "gelu looks like ReLU",
    "gelu_x2": "gelu's tanh argument uses x**2; it is sqrt(2/pi) * (x + 0.044715 * x**3)",
    "gelu_no_half": "gelu is missing the factor 0.5",
}


def cases():
    rng = np.random.default_rng(109)
    batch = 3 * rng.normal(size=(2, 3, 4))
    batch[0, 0, :] = [-50.0, -20.0, 20.0, 50.0]
    return {"gelu.grid": {"x": np.linspace(-3.0, 3.0, 25)}, "gelu.batch": {"x": batch}}


def signatures(x):
    x = np.asarray(x, dtype=np.float64)
    yield None, gpt2.gelu(x)
    for bug, text in BUGS.items():
        yield text, gpt2.gelu(x, bug)


class TestGelu(PartATest):
    values = [
        Value("1.9.1", FUNCTION, 1.5, "gelu: the tanh approximation on [-3, 3]", "gelu.grid", public=True),
        Value("1.9.2", FUNCTION, 1.5, "gelu: batch dims and large inputs (-50 .. 50)", "gelu.batch",
              visibility="after_published"),
    ]
