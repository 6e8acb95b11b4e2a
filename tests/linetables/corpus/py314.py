# min-version: 3.14
# Line-table corpus: template strings, except without parentheses, deferred annotations.


def tstrings(name):
    return t"hello {name!r} {
        name
    }"


def bare_except():
    try:
        pass
    except ValueError, TypeError:
        return 1


def annotated(a: SomeName) -> OtherName:
    return a
