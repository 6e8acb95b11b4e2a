# min-version: 3.10
# Line-table corpus: structural pattern matching and parenthesised context managers.


def matcher(command):
    match command.split():
        case [action]:
            return action
        case ["go", ("north" | "south") as direction]:
            return direction
        case ["drop", *objects] if len(objects) > 1:
            return objects
        case {"x": x,
              "y": y, **rest}:
            return x, y, rest
        case Point(x=0, y=0):
            return "origin"
        case [Point(x=0, y=0), *_]:
            return "list"
        case str() | bytes():
            return "string"
        case _:
            return None


class Point:
    __match_args__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y


def parenthesised(a, b):
    with (
        open(a) as fa,
        open(b) as fb,
    ):
        return fa.read(), fb.read()
