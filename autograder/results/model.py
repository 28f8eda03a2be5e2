"""One small typed result per graded test; the score is clamped, the status derived."""
from dataclasses import dataclass, field

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")


def number_key(number):
    """Numbers are ``part.concept.test`` ("1.10.2"); they sort numerically (other parts last)."""
    return tuple(int(p) if p.isdigit() else 10**6 for p in str(number or "").split("."))


@dataclass
class TestResult:
    name: str
    max_score: float
    score: float = 0.0
    number: str = ""
    tags: list = field(default_factory=list)
    visibility: str = "visible"
    output: str = ""
    extra_data: dict = field(default_factory=dict)

    def __post_init__(self):
        self.max_score = float(self.max_score)
        self.score = round(min(max(float(self.score), 0.0), self.max_score), 4)
        if self.visibility not in VISIBILITIES:
            raise ValueError(f"visibility {self.visibility!r} is not one of {VISIBILITIES}")

    @property
    def status(self):
        return "passed" if self.score >= self.max_score else "failed"


def from_runner_json(data, expected_tests):
    """Turn gradescope-utils' raw dict into results, mending its known defects.

    ``expected_tests`` maps each selected test's name to its declared metadata
    (``max_score``, ``number``, ``tags``, ``visibility``), so a test the runner dropped
    (a failing subTest, a skip, an error before it ran) still appears, as failed.
    """
    seen, results = set(), []
    for raw in data.get("tests", []):
        meta = expected_tests.get(raw.get("name"), {})
        seen.add(raw.get("name"))
        results.append(TestResult(
            name=raw.get("name", "?"),
            max_score=meta.get("max_score", raw.get("max_score", 0.0)),
            score=raw.get("score", 0.0),
            number=str(raw.get("number") or meta.get("number", "")),
            tags=list(raw.get("tags") or meta.get("tags", [])),
            visibility=raw.get("visibility") or meta.get("visibility", "visible"),
            output=raw.get("output", ""),
        ))
    for name, meta in expected_tests.items():
        if name not in seen:
            results.append(TestResult(name=name, max_score=meta["max_score"], score=0.0,
                                      number=meta.get("number", ""), tags=list(meta.get("tags", [])),
                                      visibility=meta.get("visibility", "visible"),
                                      output="This test did not run (the grader skipped it); no points."))
    results.sort(key=lambda r: number_key(r.number))
    return results
