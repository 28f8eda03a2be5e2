import numpy as np
from gradescope_utils.autograder_utils.decorators import number, tags, visibility, weight

from ..base import GradedTest
from ..compare import check_close


class TestSmoke(GradedTest):
    @weight(1)
    @number("1.0.1")
    @visibility("visible")
    @tags("part-a", "softmax")
    def test_softmax_smoke(self):
        """softmax: smoke"""
        got = self.call_student("softmax", np.array([[1.0, 2.0, 3.0]]))
        e = np.exp([1.0, 2, 3]); e /= e.sum()
        msg = check_close(actual=got, expected=e[None], name="softmax(x)")
        if msg:
            self.fail(msg)
