"""mean_context never returns (a busy loop that also ignores exceptions)."""


def mean_context(X):
    while True:
        try:
            while True:
                pass
        except BaseException:  # noqa: BLE001 - it must hang through anything
            continue
