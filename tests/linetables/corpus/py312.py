# min-version: 3.12
# Line-table corpus: type parameters and type aliases (PEP 695), nested f-strings.

type Pair[T] = tuple[T,
                     T]


class Box[T]:
    def get[U](self, other: U) -> T | U:
        return f"{f"{self!r}"}"


def first[T](items: list[T]) -> T:
    return items[0]
