"""placeholder"""


def install() -> None:
    pass
