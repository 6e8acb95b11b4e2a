# corpus_312.py - expressions only Python 3.12+ reads (PEP 701 f-strings, PEP 695), for the
# caret test (tests/carets/run); older interpreters skip this file.


def fstrings(f, d, a):
    f(f"{d["k"]}") + a
    f(f"{f(f"{a}")}")[0]
    x = f(f"{a:{'>'}{a}}")
    return f"{a}" + f(f"{"#"}")


type Alias = list[int]


def gaps(f, a, b):
    x = f(

        a,
        # only a comment

        b,
    )
    y = (a

         + b)
    return x + y
